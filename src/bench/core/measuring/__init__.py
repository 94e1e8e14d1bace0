"""Measuring: the step skeleton every measurement runs on (``step``: threads, quiet machine, fresh
processes, provenance, atomic record sets), wall-clock timing with warm-up apart (``measure``), others'
share of the machine (``quiet``), record sets (``records``), provenance (``provenance``) and the fixed
two-stage design that adds repeats without optional stopping (``sequential``)."""
