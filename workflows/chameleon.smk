# Chameleon: IVF-PQ search configurations (Figure 9, throughput, Table 5), the torch PQ scan target,
# the FPGA performance model, the approximate priority queue (Figures 7, 8), disaggregated memory
# nodes over TCP, RALM serving (Figures 10, 11, 12) and the claims rows.
# The rule file names the study's datasets and which file feeds which need of each step of
# bench.chameleon.STUDY; workflows/steps.smk and workflows/outputs.smk generate the rules.
# Why a rule file (the other studies' jobs are derived from their declarations, workflows/studies.smk):
# Chameleon's datasets have roles the declaration does not express (the queue and node steps each measure
# a dataset named by their own key, RALM one per model size), every one of them needs an index, built from
# one dataset's PQ m only, and RALM runs only when its own key enables it.
CHAM = config["chameleon"]
CHAM_R = f"{RESULTS}/chameleon"


def cham_index(name):
    return f"{DATA}/{PROFILE}/indexes/chameleon/{name}.faiss"


def cham_index_params(wc):
    """What the index of one dataset depends on: a change elsewhere in the section does not rebuild it."""
    return {"datasets": [wc.dataset], "pq_m": {wc.dataset: CHAM["pq_m"][wc.dataset]},
            **{k: CHAM[k] for k in ("nlist", "train_size", "nprobe", "k")}}


def cham_one(name):
    """The needs of a step that reads one dataset and its index."""
    return {"manifest": dataset_manifest(name), "index": cham_index(name)}


if CHAM["enabled"]:
    CHAM_DS = list(CHAM["datasets"])
    CHAM_RALM = CHAM["ralm"]["enabled"]
    CHAM_RALM_DS = dict(CHAM["ralm"]["datasets"]) if CHAM_RALM else {}
    CHAM_Q, CHAM_N = CHAM["queue"]["dataset"], CHAM["nodes"]["dataset"]
    _cham_needed = sorted(set(CHAM_DS) | {CHAM_Q, CHAM_N} | set(CHAM_RALM_DS.values()))
    require_datasets("chameleon", _cham_needed)
    _cham_no_m = [n for n in _cham_needed if n not in CHAM["pq_m"]]
    if _cham_no_m:
        raise ValueError(f"config: chameleon uses dataset(s) {_cham_no_m} without a PQ m in chameleon.pq_m "
                         f"(given: {sorted(CHAM['pq_m'])})")
    CHAM_SEARCH = f"{CHAM_R}/search_{{dataset}}.parquet"
    CHAM_SCAN = f"{CHAM_R}/scan_{{dataset}}.parquet"
    # record kind -> record sets: what the figure and claims rules read
    CHAM_RECORDS = {
        "search": expand(CHAM_SEARCH, dataset=CHAM_DS),
        "scan": expand(CHAM_SCAN, dataset=CHAM_DS),
        "model": [f"{CHAM_R}/model.parquet"],
        "queue": [f"{CHAM_R}/queue.parquet"],
        "nodes": [f"{CHAM_R}/nodes.parquet"],
        "energy": [f"{CHAM_R}/energy.parquet"],
    }
    CHAM_JOBS = {
        "index": job(cham_index("{dataset}"), {"manifest": dataset_manifest("{dataset}")}, params=cham_index_params),
        # search (Figure 9, throughput) and scan (the torch scan target), one dataset each
        "search": job(CHAM_SEARCH, cham_one("{dataset}"), params=CHAM),
        "scan": job(CHAM_SCAN, cham_one("{dataset}"), params=CHAM),
        "model": job(CHAM_RECORDS["model"][0], {"index": [cham_index(d) for d in CHAM_DS]}, params=CHAM, threads=1),
        # Figures 7, 8: analytic model and the queue simulated on the real PQ distances of queue.dataset
        "queue": job(CHAM_RECORDS["queue"][0], cham_one(CHAM_Q), params=CHAM, dataset=CHAM_Q, threads=1),
        # disaggregated memory nodes over TCP of nodes.dataset (timed, plus the fault-handling check rows)
        "nodes": job(CHAM_RECORDS["nodes"][0], cham_one(CHAM_N), params=CHAM, dataset=CHAM_N),
        "energy": job(CHAM_RECORDS["energy"][0], {"search": CHAM_RECORDS["search"]}, params=CHAM, threads=1),
    }
    if CHAM_RALM:
        CHAM_RECORDS["ralm"] = [f"{CHAM_R}/ralm.parquet"]
        CHAM_JOBS.update({
            "ralm": job(CHAM_RECORDS["ralm"][0], {**{f"manifest_{s}": dataset_manifest(d) for s, d in CHAM_RALM_DS.items()},
                                                  **{f"index_{s}": cham_index(d) for s, d in CHAM_RALM_DS.items()}},
                        params=CHAM),
        })
    study_jobs("chameleon", CHAM_JOBS)
    study_outputs("chameleon", cli="chameleon", records=CHAM_RECORDS, section=CHAM, category="Chameleon",
                  claim_kinds=[*claims_records("chameleon"), *(["ralm"] if CHAM_RALM else [])])
