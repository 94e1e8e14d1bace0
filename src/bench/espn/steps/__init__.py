"""ESPN's steps, one module each, found by :class:`bench.core.declaring.study.Steps`: ``build`` (encode, table, ANN
index), ``quality`` (Figures 5, 6), ``hitrate`` (Figure 7), ``e2e`` (Tables 4/5, Figure 1; each
configuration in an ``e2e-worker`` process, :mod:`bench.espn.worker`), ``batch`` (Figures 8-10,
equation 4), ``iops`` (our reader against fio), ``sizes`` (Table 3: CLS against BOW, from the build's files). What they share is :mod:`.inputs`."""
