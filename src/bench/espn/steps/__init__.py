"""ESPN's measurement steps, one module each (``runner.STEPS`` maps names to them): ``build`` (encode,
table, ANN index), ``quality`` (Figures 5, 6), ``hitrate`` (Figure 7), ``e2e`` (Tables 4/5, Figure 1; each
configuration in an ``e2e_worker`` process), ``batch`` (Figures 8-10, equation 4), ``iops`` (our reader
against fio)."""
