"""The system under test of WindVE (Huang et al., "WindVE: Collaborative CPU-NPU Vector Embedding"):
the embedding service that sends queries to the accelerator first and offloads peak queries to the CPU
(Figure 3 B, Algorithm 1). Each module is usable on its own and imports only ``bench.core`` and this
package:

- :mod:`.encoder`: the embedding model of a device instance (Section V-A2; MiniLM for bge-large);
- :mod:`.textgen`: queries of an exact token length (Section V-A3);
- :mod:`.detector`: the device detector (Section IV-C): the CUDA GPU when there is one, measured; the
  emulated accelerator without one or on request (:mod:`.emulation`: its law from the paper's ratios);
- :mod:`.estimator`: the linear-regression queue-depth estimator (Section IV-B2, equation 12), the stress
  test and fine-tuning of Table III;
- :mod:`.instances`: per-device batching instances (Section IV-A), warmed by :mod:`.warmup`;
- :mod:`.queue_manager`: Algorithm 1, with :mod:`.admission` (equation 12 used online: deadline-aware
  admission);
- :mod:`.service`: the instances behind the queue manager, configured by :mod:`.service_config`;
  :mod:`.app`: its HTTP layer, shaped like text-embeddings-inference, with :mod:`.prometheus` (TEI's
  metric names), :mod:`.tei_types` (TEI's request and answer shapes) and :mod:`.openapi` (the OpenAPI
  document generated from the routes, and its docs page); :mod:`.server`: the process (``bench windve serve``).
"""
