"""WindVE's measurement steps (Section V), one module each, found by :class:`bench.core.declaring.study.Steps`:
``profile`` (Figure 4, Table III, Figures 5 and 6: per-device closed-loop profiles, fits, stress tests)
and ``serving`` (Tables I/II: fine-tuned max concurrency without and with offload, the 3x overload case,
CPU utilisation, the queue manager's time, the service against the bare model; beyond the paper, the
open loop). Every step starts ``bench windve serve``, waits for /health, measures over HTTP on 127.0.0.1
and stops it, also on failure; what they share is in :mod:`.inputs`, the load side in :mod:`..load`."""
