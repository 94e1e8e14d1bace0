"""Judging: a claim's verdict from its records (``claims``: intervals, premises, bands, configurations,
the hardware and scale a claim needs, what the paper fixed) and the ledger that joins every study's rows
(``ledger``)."""
