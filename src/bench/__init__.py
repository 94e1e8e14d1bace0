"""bench: a reproducible benchmark harness and paper-figure suite for retrieval systems behind RAG.

Layout: ``bench.core`` (the harness, in rooms by concern: see its docstring),
``bench.data`` (formats, sources, downloads, subsets, synthetic data) and one subpackage per study,
each holding the system under test, the runner that measures it and the figures that read records.
"""

__version__ = "0.1.0"
