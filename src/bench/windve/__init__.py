"""WindVE (Huang et al., "WindVE: Collaborative CPU-NPU Vector Embedding"): an embedding service that
sends queries to the accelerator first and offloads peak queries to the CPU (Algorithm 1), with the
device detector (Section IV-C), the linear-regression queue-depth estimator (Section IV-B2, eq. 12),
and the paper's closed-loop concurrency measurements (Section V).

The system under test lives in small modules usable on their own: :mod:`.model` (the encoder),
:mod:`.textgen` (queries of exact token lengths), :mod:`.detector` (the CUDA GPU when there is one; the
emulated accelerator without one or on request), :mod:`.instances` (per-device batching instances),
:mod:`.queue_manager` (Algorithm 1) with :mod:`.admission` (equation 12 used online: deadline-aware
admission), :mod:`.warmup` (ready only once warm), :mod:`.estimator`, :mod:`.service` (the instances
behind the queue manager), :mod:`.app` (the aiohttp HTTP layer, TEI-shaped), :mod:`.metrics` (TEI's
metric names), :mod:`.serve` (``bench windve serve``), :mod:`.client` (closed-loop load and the service
process handle). :mod:`.labels` reads from the records which accelerator ran (measured or emulated).
"""
