"""Approximate-nearest-neighbour pieces that several studies share (not a study itself).

- :mod:`bench.ann.ivf`: building, saving and loading faiss IVF-PQ indexes (the recall chain, ESPN's ANN,
  Chameleon's search configurations);
- :mod:`bench.ann.metrics`: k-recall@k, the one definition every study uses.
"""
