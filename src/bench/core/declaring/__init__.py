"""Declaring and wiring a study: the study declaration and its steps (``study``), typed parameters and
their keys (``params``, ``keys``), the top-level profile (``profile``), validation of a profile against
the generated schemas (``config``) and the Snakemake rules derived from the declarations (``rules``)."""
