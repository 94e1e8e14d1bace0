"""The system under test is faiss's IVF-PQ index, built and searched through :mod:`bench.ann.ivf`
(shared with the studies whose papers search IVF-PQ): this study has no mechanism of its own."""
