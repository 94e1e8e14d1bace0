"""Trinity's rows of the claims ledger, by part of the paper (:mod:`..claims` joins them): continuous
batching (section 3.2, :mod:`.batching`), the stage-aware scheduler (section 3.3, :mod:`.scheduling`),
Figure 1's saturation (section 2, :mod:`.saturation`), Figure 2's placements (section 3.1, :mod:`.placement`),
the engine against faiss HNSW and exact search (:mod:`.search`) and the replay checked against the live
engine (:mod:`.replay`). What they share (the paper's definitions, clustering by fresh trace process, the
replay's error) is in :mod:`.common` and :mod:`.paper`."""
