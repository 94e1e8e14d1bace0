"""WindVE (Huang et al., "WindVE: Collaborative CPU-NPU Vector Embedding"): an embedding service that
sends queries to the accelerator first and offloads peak queries to the CPU (Algorithm 1), with the
device detector (Section IV-C), the linear-regression queue-depth estimator (Section IV-B2, eq. 12),
and the paper's closed-loop concurrency measurements (Section V).

- :mod:`.system`: the service and its mechanisms (encoder, detector, emulated accelerator, instances,
  queue manager with deadline admission, estimator, HTTP layer, ``bench windve serve``);
- :mod:`.load`: the load side (the service as a child process, the closed loop, one open-loop run);
- :mod:`.steps`: ``profile`` (Figure 4, Table III, Figures 5/6) and ``serving`` (Tables I/II, overload,
  utilisation, overhead, open loop);
- :mod:`.analysis`: what the figures and the claims both read from the records (gains, which
  accelerator ran: the CUDA GPU, measured, or the emulated one);
- :mod:`.gains` (Tables I/II) and :mod:`.depths` (Table III): what the figures and the claims both read;
- :mod:`.figures`, :mod:`.claims` (its rows in :mod:`.rows`), :mod:`.paper_values`;
- :mod:`.synthetic`: records built through the emulation, for the test of what the paper fixed.
"""
from ..core.declaring.study import Steps, Study
from .params import Params
from .system.server import verbs

STUDY = Study(name="windve", cli="windve", help="WindVE: embedding service with CPU offload of peak queries",
              params=Params, steps=Steps(f"{__name__}.steps"), figures=f"{__name__}.figures",
              claims=f"{__name__}.claims", verbs=verbs, synthetic=f"{__name__}.synthetic",
              title="WindVE: embedding service with CPU offload", short="WindVE", order=4)
