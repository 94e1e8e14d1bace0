"""ESPN's mechanisms, built here from the paper (the authors' public code holds only a GPUDirect read
layer), each usable on its own:

- :mod:`.layout`: the ESPN-v1 on-disk table of CLS + BOW vectors (section 4.1);
- :mod:`.encoders`: CLS + BOW vectors of passages and queries (section 3.1), the synthetic filler;
- :mod:`.candidates`: IVF candidate generation over the CLS vectors, split for the prefetcher (section
  4.2, equation 3), the index built through :mod:`bench.ann.ivf`;
- :mod:`.backends` and :mod:`.aio`: embedding access from memory, mmap, O_DIRECT (thread pool or Linux
  native AIO; the CPU stand-in for GPUDirect Storage) and GDS;
- :mod:`.maxsim`: late-interaction scoring (equation 1), exact and partial re-ranking;
- :mod:`.pipeline`: the retriever with the ANN-driven prefetcher and early re-ranking (sections 4.2-4.4);
- :mod:`.memory_budget` and :mod:`.slow_ssd`: the memory budgets of Tables 4/5 (section 5.1) and the
  emulated slower SSD;
- :mod:`.eq4`: equation 4, the query batch threshold (section 4.3).
"""
