"""WindVE (Huang et al., "WindVE: Collaborative CPU-NPU Vector Embedding"): an embedding service that
sends queries to the accelerator first and offloads peak queries to the CPU (Algorithm 1), with the
device detector (Section IV-C), the linear-regression queue-depth estimator (Section IV-B2, eq. 12),
and the paper's closed-loop concurrency measurements (Section V).

The system under test lives in small modules usable on their own: :mod:`.model` (the encoder),
:mod:`.textgen` (queries of exact token lengths), :mod:`.detector`, :mod:`.instances` (per-device
batching instances, the emulated accelerator), :mod:`.queue_manager`, :mod:`.estimator`,
:mod:`.service` (the aiohttp app), :mod:`.serve` (``bench windve serve``), :mod:`.client`
(closed-loop load and the service process handle).
"""
