"""The steps of the loaders study (Moving Stuff Around), found by :class:`bench.core.declaring.study.Steps`:
``build`` (the collection bundle and the encoder checkpoint) and the measurements ``train`` (Tables 1-2,
Figure 1), ``options`` (Table 3), ``loader_only`` and ``workers`` (beyond the paper). Shared step inputs
are in :mod:`.inputs`; :mod:`._run_rows` turns one launched run into records."""
