"""Moving Stuff Around (Câmara and Hauff, ReNeuIR@SIGIR 2022): document loaders for training a neural
ranker, measured for samples/s and memory under DataParallel and DistributedDataParallel.

The system under test (usable without the measurement code):

- :mod:`.collection`: the document collection bundle (TSV, offsets table, ir_datasets store, Arrow table);
- :mod:`.stores`: the four loaders (in-memory, indexed seek/mmap, ir_datasets, Arrow) behind one interface;
- :mod:`.samples`: (query, positive, random negative) samples and the tokenizing collate function;
- :mod:`.model`: the BERT_CAT cross-encoder (MiniLM, cut down by layers and max length for small profiles);
- :mod:`.train`: one training run (DP threads on CPU, DDP ranks) with per-step wait/copy/compute timers;
- :mod:`.launch`: the process launcher (ranks, timeouts, dead ranks, memory cap);
- :mod:`.memory`: PSS/USS of a process tree, an independent smaps_rollup reading, a cgroup memory cap (v1 or v2);
- :mod:`.filecache`: RAMDISK copies and cold page caches (section 2.3 of the paper).
"""
