"""WindVE's ledger rows, by what they judge: the max concurrency and the gain from offload (Tables I/II,
Section III-B; :mod:`.concurrency`), the queue depths (Table III; :mod:`.depths`) and the service itself
(utilisation, the queue manager's time, the harness's targets; :mod:`.service`), all built by one
:class:`.builder.Builder`."""
