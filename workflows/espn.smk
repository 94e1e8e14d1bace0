# ESPN: multi-vector re-ranking embeddings on SSD with an ANN-driven prefetcher (every table/figure).
# build -> quality (Fig 5, 6) | hitrate (Fig 7) | e2e (Tables 4/5, Fig 1) | batch (Fig 8-10, eq. 4) | iops (vs fio)
#       | sizes (Table 3: CLS vs BOW, from the build's files)
# The rule file names the dataset and which file feeds which need of each step of bench.espn.STUDY;
# workflows/steps.smk and workflows/outputs.smk generate the rules (the figures and claims read records only).
ESPN = config["espn"]

if ESPN["enabled"]:
    require_datasets("espn", ESPN["datasets"])
    if len(ESPN["datasets"]) != 1:
        raise ValueError(f"config: espn.datasets names {ESPN['datasets']}; ESPN measures exactly one text dataset")
    ESPN_DATASET = ESPN["datasets"][0]
    ESPN_BUILD = f"{DATA}/{PROFILE}/indexes/espn/{ESPN_DATASET}"
    ESPN_META = f"{ESPN_BUILD}/meta.json"   # the `build` need: the build folder, named by its meta.json
    ESPN_MANIFEST = dataset_manifest(ESPN_DATASET)
    ESPN_STEPS = ("quality", "hitrate", "e2e", "batch", "iops", "sizes")
    # record kind -> record sets: what the figure and claims rules read
    ESPN_RECORDS = {s: [f"{RESULTS}/espn/{s}.parquet"] for s in ESPN_STEPS}

    ESPN_RUN = {"params": ESPN, "dataset": ESPN_DATASET}
    study_jobs("espn", {
        "build": job({"meta": ESPN_META, "table": f"{ESPN_BUILD}/table.espn",
                      "offsets": f"{ESPN_BUILD}/table.espn.offsets.npz", "index": f"{ESPN_BUILD}/ann.faiss",
                      "queries": f"{ESPN_BUILD}/queries.npz"},
                     {"manifest": ESPN_MANIFEST}, **ESPN_RUN, out_arg=ESPN_BUILD),
        "quality": job(ESPN_RECORDS["quality"][0], {"build": ESPN_META, "manifest": ESPN_MANIFEST}, **ESPN_RUN),
        "hitrate": job(ESPN_RECORDS["hitrate"][0], {"build": ESPN_META}, **ESPN_RUN),
        "e2e": job(ESPN_RECORDS["e2e"][0], {"build": ESPN_META}, **ESPN_RUN),
        "batch": job(ESPN_RECORDS["batch"][0], {"build": ESPN_META}, **ESPN_RUN),
        "iops": job(ESPN_RECORDS["iops"][0], {"build": ESPN_META}, **ESPN_RUN),
        "sizes": job(ESPN_RECORDS["sizes"][0], {"build": ESPN_META}, **ESPN_RUN),
    })
    study_outputs("espn", cli="espn", records=ESPN_RECORDS, section=ESPN,
                  category="ESPN", claim_kinds=claims_records("espn"))
