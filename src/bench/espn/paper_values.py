"""Values the ESPN paper states (Shrestha, Reddy, Li), transcribed to show beside ours as 'paper'.

Only numbers given in the text or tables are transcribed; curves shown only as plots are not read off.
"""

# Table 4: end-to-end query latency (ms), MS MARCO v1 (ColBERTer, 16.8 GB BOW table), memory limit.
# "*": the embedding table was cached in memory.
TABLE4_MEMORY_GB = [10, 15, 20, 25, 30]
TABLE4_MS = {
    "mmap": [183.2, 142.9, 86.3, 56.4, 53.4],
    "vm_swap": [76.0, 65.0, 59.4, 52.2, 45.6],
    "direct": [54.2, 54.0, 52.6, 52.5, 52.9],            # ESPN (GDS)
    "direct_prefetch": [46.5, 47.2, 46.8, 46.5, 46.6],   # ESPN (GDS + prefetcher @ 10%)
}
TABLE4_TABLE_GB = 16.8  # Table 3: BOW embeddings of MS MARCO v1
TABLE4_ANN_GB = 4.3     # section 5.1: faiss IVF-Flat index size, v1
V1_PASSAGES = 8_800_000  # Table 3: MS MARCO v1 passages ("8.8M"), the collection of Figure 7's hit rates

# Table 5: end-to-end query latency (ms), MS MARCO v2 (255.4 GB BOW table). vm_swap: OOM everywhere.
TABLE5_MEMORY_GB = [32, 64, 128, 256]
TABLE5_MS = {
    "mmap": [271.5, 236.1, 198.7, 188.6],
    "vm_swap": [None, None, None, None],
    "direct": [91.2, 90.7, 90.02, 90.05],
    "direct_prefetch": [85.8, 85.2, 84.9, 85.7],         # prefetcher @ 30%
}

# Section 5.3: ESPN is 3.1-3.9x faster than mmap end to end; 1.02x of the memory-based solution.
SPEEDUP_VS_MMAP = (3.1, 3.9)
RATIO_VS_CACHED = 1.02
# Sections 1 and 5.3: offloading the BOW table cuts the memory needed 5-16x (depending on the ANN index's
# quantisation) while storing 6-19% of the indices in memory.
MEMORY_REDUCTION = (5, 16)

# Section 5.2 / Figure 7: hit rate vs prefetch step. v1 at nprobe 1000 and 3000: 74% and 85% at 5%,
# above 90% at 30%; v2 at nprobe 160 and 200: 68% and 70% at 5%, 89% and 90% at 30%.
FIG7_POINTS = [
    # (dataset, nprobe, step, hit rate)
    ("v1", 1000, 0.05, 0.74), ("v1", 3000, 0.05, 0.85), ("v1", 1000, 0.30, 0.90), ("v1", 3000, 0.30, 0.90),
    ("v2", 160, 0.05, 0.68), ("v2", 200, 0.05, 0.70), ("v2", 160, 0.30, 0.89), ("v2", 200, 0.30, 0.90),
]

# Section 4.4 / Figure 6: re-ranking the top 64-128 keeps 99.3-99.7% of MRR@10 (ColBERTer, native
# candidate generator); 99.0-99.4% for ColBERTv2 with uniCOIL-tok. Section 5.5: top 64 costs 0.7%.
FIG6_POINTS = [("ColBERTer", 64, 0.993), ("ColBERTer", 128, 0.997)]
MRR_KEPT = (0.993, 0.997)

# Section 4.2: with a 10% step and eta = 2000, the prefetch budget is about 28 ms (v1, Figure 5).
PREFETCH_BUDGET_MS = 28.0
# Section 5.1: nlist 2^15 (v1) and 2^16 (v2); nprobe 3000 (v1) and 160 (v2); steps 10% and 30%.

# Section 5.4 / Figures 8-10: GDS has 7.2x the embedding access latency of DRAM (exact, top 1000);
# ESPN is competitive with DRAM up to batch 12 (PCIe 3.0 SSD; ~24 with PCIe 4.0 by equation 4);
# ESPN improves on GDS by 3.9-6.4x within that limit; partial re-ranking (top 64) raises it to 192.
GDS_VS_DRAM_ACCESS = 7.2
BATCH_THRESHOLD_EXACT = 12
BATCH_THRESHOLD_PARTIAL = 192
ESPN_VS_GDS_ACCESS = (3.9, 6.4)

# Table 1: ColBERTer (dim 32) MS MARCO v1 dev: 18.8 GB index, 51 ms, MRR@10 0.387, R@1k 0.961.
COLBERTER_R1000 = 0.961

# Table 3 (section 3.1, "Index breakdown in ColBERTer"): uncompressed, unquantised 16-bit vectors; the CLS
# part is one 128-d vector per passage, the BOW part 32-d vectors per token. Sizes as printed ("GB"); the
# counts as printed (8.8M, 597.9M, 138.4M, 9.4B). Section 5.1 gives the candidate-generation indexes:
# faiss IVF-Flat 4.3 GB (v1), IVF-PQ (m=128, nbits=8) 17.5 GB (v2).
TABLE3_WHERE = "Table 3 (section 3.1)"
ANN_WHERE = "section 5.1 (Datasets)"
TABLE3 = {
    # collection: (passages, tokens, queries, CLS GB, BOW GB, ANN index GB, ANN index kind)
    "MS MARCO v1": (8.8e6, 597.9e6, 6980, 2.1, 16.8, 4.3, "IVF-Flat"),
    "MS MARCO v2": (138.4e6, 9.4e9, 3903, 34.6, 255.4, 17.5, "IVF-PQ m=128, nbits=8"),
}
# Section 3.1: "The single vector representation (CLS vector) is much smaller (7.7x uncompressed) than
# the multi-vector representation (BOW vector)".
BOW_VS_CLS = 7.7

# Section 5.1 and Figure 7: the ANN settings of the hit rates (nlist 2^15 for v1, 2^16 for v2; K = 1000, the
# candidates re-ranked), for the share of the scanned candidates the top K is: K x nlist / (passages x nprobe).
K = 1000
FIG7_SETTINGS = [
    # (dataset, passages, nlist, nprobe)
    ("v1", 8.8e6, 2 ** 15, 1000), ("v1", 8.8e6, 2 ** 15, 3000),
    ("v2", 138.4e6, 2 ** 16, 160), ("v2", 138.4e6, 2 ** 16, 200),
]
# Section 5.3: ESPN stores 6-19% of the total retrieval indices in memory.
INDEX_SHARE = (0.06, 0.19)


def size_rows() -> list[dict]:
    """The paper's Table 3 (CLS, BOW) and section 5.1 (ANN index) sizes as rows of the sizes records
    (``source = paper``), GB as printed (1e9 B)."""
    rows = []
    for coll, (n, tok, nq, cls_gb, bow_gb, ann_gb, ann_kind) in TABLE3.items():
        for part, gb, where in (("cls", cls_gb, TABLE3_WHERE), ("bow", bow_gb, TABLE3_WHERE),
                                ("ann_index", ann_gb, f"{ANN_WHERE}: faiss {ann_kind}")):
            rows.append({"scope": "paper", "collection": coll, "part": part, "bytes": gb * 1e9, "n_passages": int(n),
                         "n_tokens": int(tok), "n_queries": int(nq), "bytes_per_passage": gb * 1e9 / n,
                         "source": "paper", "where_in_paper": where,
                         "index": f"faiss {ann_kind}" if part == "ann_index" else ""})
    return rows
