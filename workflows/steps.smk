# The build and measurement rules of every study, generated from what each study's rule file declared with
# study_jobs() (which file feeds which need of each step of the study's STUDY declaration): one rule per
# step, named <study>_<step>. A measurement takes every core (nothing else runs beside it).
for _study, _jobs in STUDY_JOBS.items():
    _cli = STUDY_OUTPUTS[_study]["cli"]
    for _name, _j in _jobs.items():
        _wild = job_wildcards(_j)

        rule:
            name:
                f"{_study}_{_name}"
            input:
                **_j["needs"],
                **_j["after"],
            output:
                **_j["out"],
            params:
                p=(lambda wc, _f=_j["params"]: as_json(_f(wc))) if callable(_j["params"]) else as_json(_j["params"]),
                ins=lambda wc, input, _k=list(_j["needs"]): inputs_arg(input, _k),
                out=(lambda wc, output, _a=_j["out_arg"]: _a.format(**wc) if _a else output[0]),
                ds=(lambda wc, _d=_j["dataset"]: f"--dataset {wc.dataset}" if "dataset" in wc.keys()
                    else (f"--dataset {_d}" if _d else "")),
                # a params entry, so a changed thread count, seed or process count reruns the step
                run=RUN_ARGS + (f" --processes {PROCESSES}" if _j["processes"] else ""),
                cmd=f"{_cli} {_j['verb']} {_name}",
            wildcard_constraints:
                dataset="|".join(map(re.escape, config["datasets"])) or "none",
            threads: _j["threads"] or workflow.cores
            benchmark:
                f"{BENCHMARKS}/{_study}/{_name}" + "".join(f"_{{{w}}}" for w in _wild) + ".tsv"
            shell:
                "{BENCH} {params.cmd} {params.ins} {params.ds} --out {params.out:q} {params.run} --params {params.p:q}"
