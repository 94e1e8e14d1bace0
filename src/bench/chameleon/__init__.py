"""Chameleon (Jiang et al., "Chameleon: a heterogeneous and disaggregated accelerator system for
retrieval-augmented language models"): IVF-PQ search on CPU, CPU+GPU, GPU and a modelled near-memory
accelerator (ChamVS), disaggregated memory nodes over TCP, and RALM serving (ChamLM).

- ``system/``: the paper's mechanisms, usable on their own (the PQ-scan kernel, the search back ends of
  section 6.2, the ChamVS performance model, the approximate priority queue, memory nodes and their
  coordinator, RALM generation, energy counters);
- ``steps/``: one module per step, each declaring what it reads and writes: the ``index`` build, then
  ``search`` (Figure 9, throughput), ``scan`` (the torch scan target), ``model`` (the performance model
  against the authors' points), ``queue`` (Figures 7, 8), ``nodes`` (memory nodes), ``ralm``
  (Figures 10-12), ``energy`` (Table 5); shared step inputs in ``steps/inputs.py``;
- ``analysis``: the aggregates figures and claims share; ``figures/``: the registered figures;
  ``claims`` and ``targets``: the ledger rows (``wording``: the scale and premises they state);
  ``paper_values``: the authors' archived values (``paper_data/``); ``power``: Table 5's power model;
  ``synthetic``: synthetic records for the sensitivity test of what the paper fixed.

This package imports neither torch nor faiss at import time, so memory-node processes start fast.
"""
from ..core.declaring.study import Steps, Study
from .params import Params

STUDY = Study(name="chameleon", cli="chameleon",
              help="Chameleon: IVF-PQ on CPU/GPU/modelled FPGA, memory nodes, RALM serving",
              params=Params, steps=Steps(f"{__name__}.steps"), figures=f"{__name__}.figures",
              claims=f"{__name__}.claims", synthetic=f"{__name__}.synthetic",
              title="Chameleon: IVF-PQ on CPU, GPU and FPGA", short="Chameleon", order=2)
