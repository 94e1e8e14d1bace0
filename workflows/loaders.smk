# Moving Stuff Around: document loaders x DP/DDP, samples/s and memory (Figure 1, Tables 1-3, extras).
# build (collection bundle + cut-down encoder in model/ beside it) -> train (Tables 1-2, Fig 1) | options
# (Table 3) | loader_only | workers; the rule file names the dataset and which file feeds which need of
# each step of bench.loaders.STUDY; workflows/steps.smk and workflows/outputs.smk generate the rules.
LOADERS = config["loaders"]

if LOADERS["enabled"]:
    require_datasets("loaders", LOADERS["datasets"])
    LOADERS_DATASET = LOADERS["datasets"][0]
    LOADERS_BUILD = f"{DATA}/{PROFILE}/indexes/loaders/{LOADERS_DATASET}"
    LOADERS_BUNDLE = f"{LOADERS_BUILD}/bundle.json"
    LOADERS_MODEL = f"{LOADERS_BUILD}/model/model.pt"   # written by the build beside the bundle
    LOADERS_STEPS = ("train", "options", "loader_only", "workers")
    # record kind -> record sets: what the figure and claims rules read
    LOADERS_RECORDS = {step: [f"{RESULTS}/loaders/{step}.parquet"] for step in LOADERS_STEPS}
    _LOADERS_SUB = ("options", "loader_only", "workers")

    def loaders_step_params(step):
        """The section a step reads: the common keys and its own sub-section only, so a changed value
        reruns only the steps that read it."""
        return lambda wc: {k: v for k, v in LOADERS.items() if k not in _LOADERS_SUB or k == step}

    study_jobs("loaders", {
        "build": job({"bundle": LOADERS_BUNDLE, "model": LOADERS_MODEL},
                     {"manifest": dataset_manifest(LOADERS_DATASET)},
                     params={k: LOADERS[k] for k in ("collection", "encoder", "layers")},
                     dataset=LOADERS_DATASET, threads=1),
        # measurements: each step's record set from the bundle; the model beside it is waited for, not passed
        "train": job(LOADERS_RECORDS["train"][0], {"bundle": LOADERS_BUNDLE}, after={"model": LOADERS_MODEL},
                     params=loaders_step_params("train"), dataset=LOADERS_DATASET),
        "options": job(LOADERS_RECORDS["options"][0], {"bundle": LOADERS_BUNDLE}, after={"model": LOADERS_MODEL},
                       params=loaders_step_params("options"), dataset=LOADERS_DATASET),
        "loader_only": job(LOADERS_RECORDS["loader_only"][0], {"bundle": LOADERS_BUNDLE},
                           after={"model": LOADERS_MODEL}, params=loaders_step_params("loader_only"),
                           dataset=LOADERS_DATASET),
        "workers": job(LOADERS_RECORDS["workers"][0], {"bundle": LOADERS_BUNDLE}, after={"model": LOADERS_MODEL},
                       params=loaders_step_params("workers"), dataset=LOADERS_DATASET),
    })
    study_outputs("loaders", cli="loaders", records=LOADERS_RECORDS, section=LOADERS,
                  category="Moving Stuff Around (loaders)", claim_kinds=claims_records("loaders"))
