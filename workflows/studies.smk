# The build and measurement jobs and record sets of every study without a rule file of its own, derived from
# its declaration (bench.core.declaring.rules: each step says where its job runs, what it writes and needs): a new study
# needs no .smk. workflows/steps.smk and workflows/outputs.smk then generate the rules of every study alike.
from bench.core.declaring.rules import RuleError, derive
from bench.core.declaring.study import declared

for _s in declared():
    if (BASE / "workflows" / f"{_s.name}.smk").exists():
        continue   # wired by its own rule file (which says why)
    _sec = config[_s.name]
    if not _sec["enabled"]:
        continue
    if _sec.get("datasets"):
        require_datasets(_s.name, _sec["datasets"])
    try:
        _jobs, _records = derive(_s, _sec, results=RESULTS, indexes=f"{DATA}/{PROFILE}/indexes",
                                 manifest=dataset_manifest)
    except RuleError as _exc:
        print(f"bench: {_exc}", file=sys.stderr)
        sys.exit(1)
    study_jobs(_s.name, {n: job(j.pop("out"), j.pop("needs"), **j) for n, j in _jobs.items()})
    study_outputs(_s.name, cli=_s.cli, records=_records, section=_sec, category=_s.label,
                  claim_kinds=claims_records(_s.name, _records))
