"""ESPN (Shrestha, Reddy, Li): multi-vector re-ranking embeddings on SSD with an ANN-driven prefetcher.

The system under test, built here from the paper (the authors' public code holds only a GPUDirect read
layer): ``layout`` (ESPN-v1 on-disk table, section 4.1), ``encoders`` (CLS + BOW vectors, section 3.1),
``ann`` (IVF candidate generation, section 4.2), ``backends`` (embedding access: memory, mmap, O_DIRECT,
GDS), ``maxsim`` (equation 1), ``pipeline`` (prefetcher, early and partial re-ranking, sections 4.2-4.4),
``memory`` (memory budgets and the emulated slower SSD, section 5.1). ``steps`` measure (``runner.STEPS``
names them), ``figures`` draws every table and figure from records, ``eq4`` evaluates equation 4 from
records, ``claims`` builds the study's rows of the claims ledger, ``cli`` wires the verbs.
"""
