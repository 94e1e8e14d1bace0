"""Moving Stuff Around (Câmara and Hauff, ReNeuIR@SIGIR 2022): document loaders for training a neural
ranker, measured for samples/s and memory under DataParallel and DistributedDataParallel.

- :mod:`.system`: the mechanisms, usable on their own: the collection bundle, the loaders (in-memory,
  indexed, ir_datasets, Arrow), samples and collate, the BERT_CAT ranker, one training run (DP, DDP), the
  process launcher and torchrun rank, the process tree's memory footprint, RAMDISK and cold caches;
- :mod:`.steps`: ``build`` (bundle + encoder), ``train`` (Tables 1-2, Figure 1), ``options`` (Table 3),
  ``loader_only`` and ``workers`` (beyond the paper);
- :mod:`.analysis`: the aggregates the figures and claims share; :mod:`.figures`, :mod:`.claims`;
- :mod:`.verbs`: ``bench loaders ddp-rank`` (a DDP rank under torchrun, one node or several).
"""
from ..core.declaring.study import Steps, Study
from .params import Params
from .verbs import verbs

STUDY = Study(name="loaders", cli="loaders", help="document loaders x DP/DDP: samples/s and memory (Moving Stuff Around)",
              params=Params, steps=Steps(f"{__name__}.steps"), figures=f"{__name__}.figures",
              claims=f"{__name__}.claims", verbs=verbs,
              title="Moving Stuff Around: document loaders under DP and DDP", short="Moving Stuff Around", order=3)
