"""ESPN (Shrestha, Reddy, Li): multi-vector re-ranking embeddings on SSD with an ANN-driven prefetcher.

The system under test is built here from the paper (the authors' public code holds only a GPUDirect read
layer) and lives in :mod:`.system`: the ESPN-v1 table (section 4.1), the CLS + BOW encoders (3.1), IVF
candidate generation split for the prefetcher (4.2, through :mod:`bench.ann.ivf`), the embedding back ends
(memory, mmap, O_DIRECT, GDS), MaxSim (equation 1), the prefetching retriever (4.2-4.4), memory budgets
and the emulated slower SSD (5.1), equation 4 (4.3). The steps in :mod:`.steps` build and measure;
:mod:`.analysis` holds what the figures (:mod:`.figures`, every table and figure of the paper) and the
claims (:mod:`.claims`) both compute from the records.
"""
from ..core.declaring.study import Steps, Study
from .params import Params
from .verbs import verbs

STUDY = Study(name="espn", cli="espn", help="ESPN: multi-vector re-ranking embeddings on SSD with a prefetcher",
              params=Params, steps=Steps(f"{__name__}.steps"), figures=f"{__name__}.figures",
              claims=f"{__name__}.claims", verbs=verbs, synthetic=f"{__name__}.synthetic",
              title="ESPN: re-ranking embeddings offloaded to SSD", short="ESPN", order=1)
