# WindVE: the embedding service with CPU offload of peak queries (the CUDA GPU where there is one, measured;
# else an emulated accelerator, or on request: profile key windve.accelerator).
# profile (Figure 4, Table III, Figures 5/6) -> serving (Tables I/II, overload, utilisation, overhead,
# open loop) -> figures -> claims. Each measurement step starts `bench windve serve` on 127.0.0.1,
# waits for /health, measures over HTTP and stops it (also when the step fails). The rule file names
# which file feeds which need of each step of bench.windve.STUDY; workflows/steps.smk and
# workflows/outputs.smk generate the rules (windve_profile, windve_serving, the figure and claims rules).
WINDVE = config["windve"]

if WINDVE["enabled"]:
    WINDVE_PROFILE = f"{RESULTS}/windve/profile.parquet"
    WINDVE_SERVING = f"{RESULTS}/windve/serving.parquet"
    study_jobs("windve", {
        "profile": job(WINDVE_PROFILE, params=WINDVE),
        "serving": job(WINDVE_SERVING, {"profile": WINDVE_PROFILE}, params=WINDVE),
    })
    study_outputs("windve", cli="windve", records={"profile": [WINDVE_PROFILE], "serving": [WINDVE_SERVING]},
                  section=WINDVE, category="WindVE", claim_kinds=claims_records("windve"))
