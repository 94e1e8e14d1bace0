"""The steps of the recall chain: ``index`` (build) and ``recall`` (measure); found by
:class:`bench.core.declaring.study.Steps`."""
