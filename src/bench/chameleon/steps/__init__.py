"""The steps of the Chameleon study, one per module, found by :class:`bench.core.declaring.study.Steps`: the build
``index`` (IVF-PQ of one dataset), and the measurement steps ``search``, ``scan``, ``model``, ``queue``,
``nodes``, ``ralm`` and ``energy``. What several steps read (a dataset and its index, the ChamVS node and
host path calibrated on the authors' points) is in ``inputs``."""
