"""Presenting: a study's figure registry (``figures``), the common plotting style and its checks
(``plotting``, ``figure_checks``), readable tables (``tables``), links between rows and figures
(``report_links``), and the report page that opens on the ledger (``report``)."""
