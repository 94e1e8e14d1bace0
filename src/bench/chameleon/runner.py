"""The measurement steps of the Chameleon study (``STEPS``), each ``fn(ctx) -> Result``; the step
modules hold them:

- ``search`` (steps_search): Figure 9 latencies per batch size x configuration, recall@K, throughput;
- ``scan`` (steps_search): the torch PQ scan against faiss's scan of the same lists (ratio, GB/s per core);
- ``model`` (steps_model): the FPGA performance model, calibrated on three of the authors' points, against
  all their other FPGA points;
- ``queue`` (steps_queue): the approximate hierarchical priority queue, analytic and simulated (Figures 7, 8);
- ``nodes`` (steps_nodes): disaggregated memory nodes over TCP: identity with one process, overhead,
  fault handling (check rows);
- ``ralm`` (steps_ralm): RALM serving per model x retrieval interval x configuration (Figures 10-12);
- ``energy`` (steps_ralm): energy per query (Table 5): measured if a counter is readable, else modelled.
"""
from __future__ import annotations

from .steps_model import model
from .steps_nodes import nodes
from .steps_queue import queue
from .steps_ralm import energy, ralm
from .steps_search import scan, search

STEPS = {"search": search, "scan": scan, "model": model, "queue": queue, "nodes": nodes, "ralm": ralm,
         "energy": energy}
