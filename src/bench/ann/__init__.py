"""Approximate-nearest-neighbour pieces that several studies share (not a study itself).

- :mod:`bench.ann.ivf`: building, saving and loading faiss IVF-PQ indexes (the recall chain, ESPN's ANN,
  Chameleon's search configurations);
- :mod:`bench.ann.metrics`: k-recall@k, the one definition every study uses;
- :mod:`bench.ann.graph` (with :mod:`bench.ann.knn`): the CAGRA-style fixed-degree graph, its exact kNN graph
  (CPU and CUDA paths giving the same lists), pruning and reverse edges, and its fingerprinted ibin file
  (Trinity's search graph, section 3.2);
- :mod:`bench.ann.hnsw`: faiss HNSW build and search (Trinity's HNSW baseline curve).
"""
