"""The system under test of Moving Stuff Around (Câmara and Hauff, ReNeuIR@SIGIR 2022), usable without
the measurement steps: document loaders feeding a neural ranker's training under DP and DDP.

- :mod:`.collection`: the document collection bundle (TSV, offsets table, ir_datasets store, Arrow table);
- :mod:`.stores`: the loaders (in-memory, indexed seek/mmap, ir_datasets, Arrow) behind one interface;
- :mod:`.samples`: (query, positive, random negative) samples and the tokenizing collate function;
- :mod:`.bert_cat`: the BERT_CAT cross-encoder (MiniLM, cut down by layers and max length for small profiles);
- :mod:`.train`: one training run (DP threads on CPU, DDP ranks) with per-step wait/copy/compute timers;
- :mod:`.launch`: the process launcher (forkserver, ranks, timeouts, dead ranks, memory cap);
- :mod:`.rank_imports`: what the forkserver imports once for every run process;
- :mod:`.torchrun`: one DDP rank under torchrun (one node or several);
- :mod:`.footprint`: PSS/USS of a process tree, an independent smaps_rollup reading, a memory cap;
- :mod:`.filecache`: RAMDISK copies and cold page caches (section 2.3 of the paper);
- :mod:`.errors`: the errors the above raise.

Nothing here imports the study's steps, figures or claims; rank bodies are module-level functions (they
pickle to the forkserver's processes).
"""
