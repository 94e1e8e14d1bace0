"""Chameleon (Jiang et al.): IVF-PQ search on CPU, CPU+GPU, GPU and a modelled near-memory accelerator,
disaggregated memory nodes over TCP, and RALM serving.

Modules (each says which part of the paper it implements):

- ``pqscan``: the project's own PQ-scan kernel in torch (section 2.2, Figure 2 steps 4-6).
- ``configs``: the search configurations of section 6.2 behind one interface.
- ``fpga_model``: performance model of one ChamVS memory node (section 4.1, 4.3, 6.2).
- ``priority_queue``: the approximate hierarchical priority queue (section 4.2, Figures 7 and 8).
- ``protocol``, ``memory_node``, ``coordinator``: disaggregated memory nodes (sections 3, 4.3).
- ``ralm``: ChamLM decoder-only / encoder-decoder transformers with retrieval (section 6.3, Table 2).
- ``energy``: energy per query (Table 5).
- ``paper_values``: the authors' archived values (``paper_data/``).

The study contract (docs/adding-a-study.md): ``runner.STEPS`` maps the measurement steps to the step
modules ``steps_search`` (index, Figure 9, throughput, the scan target), ``steps_model``, ``steps_queue``,
``steps_nodes`` and ``steps_ralm`` (RALM, Table 5); ``figures.FIGURES`` is the figure registry
(``figures``, ``figures_search``, ``figures_ralm``); ``claims`` builds the ledger rows; ``cli`` the verbs.

This package imports neither torch nor faiss at import time, so memory-node processes start fast.
"""
