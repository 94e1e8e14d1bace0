"""Trinity (Liu and Qian, 2025): a shared vector-search pool for prefill/decode-disaggregated LLM serving.

The paper has no code and no evaluation; this study builds its mechanisms (:mod:`.system`: the
CAGRA-style graph, the extend-step engine, static and continuous batching, the stage-aware scheduler, the
event loop, the emulated LLM workload, Figure 1's roofline fit and Figure 2's placement model) and measures
them (:mod:`.steps`): ``graph`` (build), ``recall`` and ``trace`` (the engine offline), ``load`` and
``sched`` (the pool as a service, replaying the trace), ``roofline`` (Figure 1) and ``placement``
(Figure 2, modelled). The ledger's rows are built in :mod:`.claims` (one module per part of the paper in
:mod:`.verdicts`); :mod:`.synthetic` builds records of every kind they read, through Figure 2's model (the
paper's one search GPU per LLM node), for the sensitivity test of what the paper fixed. The declaration
below is all the CLI, the derived rules and the contract test read.
"""
from ..core.declaring.study import Steps, Study
from .params import Params

STUDY = Study(name="trinity", cli="trinity",
              help="Trinity: continuous batching and stage-aware scheduling of graph search",
              params=Params, steps=Steps(f"{__name__}.steps"), figures=f"{__name__}.figures",
              claims=f"{__name__}.claims", synthetic=f"{__name__}.synthetic",
              title="Trinity: batching for graph vector search", short="Trinity", order=5)
