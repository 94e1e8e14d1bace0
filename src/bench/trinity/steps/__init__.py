"""Trinity's steps, one module each (found by :class:`bench.core.declaring.study.Steps`): the build ``graph``; the
engine measured offline, ``recall`` and ``trace``; the pool as a service, ``load`` and ``sched`` (replays of
the trace); Figure 1's ``roofline`` and Figure 2's ``placement``. What several steps read is in
:mod:`.inputs`."""
