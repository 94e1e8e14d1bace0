"""Chameleon's mechanisms (Jiang et al.), usable on their own: each module imports only ``bench.core``,
``ann``, ``serving``, ``data`` and this package.

- ``pqscan``: the project's own PQ-scan kernel in torch (section 2.2, Figure 2 steps 4-6);
- ``exact``: exact brute force in torch, the anchor an approximate engine must beat;
- ``backends``: the search configurations of section 6.2 (cpu, cpu-gpu, gpu, torch-*, fpga-*, exact-*)
  behind one interface;
- ``fpga_model``: performance model of one ChamVS memory node (sections 4.1, 4.3, 6.2);
- ``priority_queue``: the approximate hierarchical priority queue (section 4.2, Figures 7 and 8);
- ``protocol``, ``memory_node``, ``coordinator``: disaggregated memory nodes over TCP (sections 3, 4.3);
- ``ralm``: ChamLM retrieval-augmented generation with the Llama / T5 models of ``bench.serving.lm``
  (section 6.3, Table 2);
- ``energy``: power counters (RAPL, NVML) around a measured region (Table 5).

Nothing here imports torch or faiss at import time, so memory-node processes start fast.
"""
