"""WindVE's measurement steps, one module each (``runner.STEPS`` maps names to them): ``profile``
(Figure 4, Table III, Figures 5 and 6: per-device closed-loop profiles, fits, stress tests),
``concurrency`` (Tables I/II: fine-tuned max concurrency without and with offload, the 3x overload
case, CPU utilisation, the queue manager's time, the service against the bare model), ``openloop``
(beyond the paper: Poisson and bursty arrivals, goodput and percentiles against offered load).
Every step starts ``bench windve serve``, waits for /health, measures and stops it."""
