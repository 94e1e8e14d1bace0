# IVF-PQ recall@k and queries/s against nprobe: data -> build (index) -> measure -> figure -> claims.
# The worked example of docs/adding-a-study.md: the rule file names the study's datasets and which file
# feeds which need of each step of bench.ivf_recall.STUDY; workflows/steps.smk and workflows/outputs.smk
# generate the rules.
IVF = config["ivf_recall"]


def ivf_params(wc):
    """The section with the dataset's index overrides applied (an override reruns only that dataset)."""
    return {**IVF, "index": {**IVF["index"], **IVF["index_overrides"].get(wc.dataset, {})}}


if IVF["enabled"]:
    require_datasets("ivf_recall", IVF["datasets"])
    IVF_INDEX = f"{DATA}/{PROFILE}/indexes/ivf_recall/{{dataset}}.faiss"
    IVF_RECALL = f"{RESULTS}/ivf_recall/recall_{{dataset}}.parquet"
    study_jobs("ivf_recall", {
        "index": job(IVF_INDEX, {"manifest": dataset_manifest("{dataset}")}, params=ivf_params),
        "recall": job(IVF_RECALL, {"manifest": dataset_manifest("{dataset}"), "index": IVF_INDEX}, params=ivf_params),
    })
    study_outputs("ivf_recall", cli="ivf-recall", records={"recall": expand(IVF_RECALL, dataset=IVF["datasets"])},
                  section=IVF, category="IVF-PQ recall", claim_kinds=claims_records("ivf_recall"))
