"""Approximate-nearest-neighbour pieces that several studies share (not a study itself).

- :mod:`bench.ann.ivf`: building, saving and loading faiss IVF-PQ indexes (the recall chain, ESPN's ANN,
  Chameleon's search configurations);
- :mod:`bench.ann.metrics`: k-recall@k, the one definition every study uses;
- :mod:`bench.ann.graph` (with :mod:`bench.ann.knn`): the CAGRA-style fixed-degree graph, its exact kNN graph
  (CPU and CUDA paths giving the same lists), pruning and reverse edges, and its fingerprinted ibin file
  (Trinity's search graph, section 3.2);
- :mod:`bench.ann.hnsw`: faiss HNSW build and search (Trinity's HNSW baseline curve);
- :mod:`bench.ann.knn_ivf`: the GPU kNN graph's candidates past the exact limit (an inverted file on the device);
- :mod:`bench.ann.brute`: exact brute force as a GPU does it best (streamed top-K, fp32 TF32 off or fp16): the
  fair anchor of the GPU targets;
- GPU kernels in Triton, each with a plain torch reference it equals: :mod:`bench.ann.ivfpq_fused` (the fused
  IVF-PQ scan, kernel :mod:`bench.ann.ivfpq_kernel`; Chameleon's GPU baseline) and
  :mod:`bench.ann.graph_search` (beam search over a fixed-degree graph, kernel :mod:`bench.ann.graph_kernel`;
  Trinity's engine), their shared sort network :mod:`bench.ann.kernel_lib`; :mod:`bench.ann.kernels` says
  where a kernel can run (CUDA, Triton's interpreter, or the caller's torch path) and launches it;
  :mod:`bench.ann.census` counts launches, host synchronisations and bytes of a search without a GPU.
"""
