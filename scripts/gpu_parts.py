"""The parts of ``make gpu-check`` (scripts/gpu_check.py starts each in its own process, with its own
timeout): ``env`` (the machine), ``tests`` (``pytest -m gpu``), ``profile`` (the ``gpu-check`` profile through
Snakemake, records and ledger counted) and ``targets`` (scripts/gpu_targets.py, one process per target).

Each writes its result as JSON to ``--out``. Run: ``python scripts/gpu_parts.py <part> --out f.json
--deadline-s S`` (S: seconds this part may take; inner commands get what is left of it).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import gpu_targets  # noqa: E402
from gpu_check import run_logged  # noqa: E402  (one bounded runner for the parts and their commands)

NO_CUDA = gpu_targets.NO_CUDA
PROFILE = "gpu-check"


# ----------------------------------------------------------------------------- env
def cuda() -> bool:
    from bench.core.machine import devices

    return devices.cuda_available()


def _smi(*query: str) -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(query)}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=15, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [c.strip() for c in out.splitlines()[0].split(",")] if out.strip() else []


def _smi_cuda_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=15).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"CUDA Version:\s*([\d.]+)", out)
    return m.group(1) if m else None


def env_part(args) -> dict:
    import faiss
    import torch

    from bench.core.machine import cgroups, devices

    has = devices.cuda_available()
    smi = _smi("name", "memory.total", "driver_version") if has else []
    info = {
        "cuda": has,
        "gpu_model": smi[0] if smi else None,
        "gpu_memory_mib": int(float(smi[1])) if len(smi) > 1 and smi[1].replace(".", "").isdigit() else None,
        "gpu_count": devices.gpu_count(),
        "driver": smi[2] if len(smi) > 2 else None,
        "cuda_driver_version": _smi_cuda_version() if has else None,
        "cuda_runtime_torch": torch.version.cuda,
        "torch": torch.__version__,
        "faiss": getattr(faiss, "__version__", "?"),
        "faiss_gpu": bool(hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0),
        "faiss_gpu_why": ("faiss GPU build, {} GPU(s)".format(faiss.get_num_gpus())
                          if hasattr(faiss, "StandardGpuResources") else "faiss CPU build (no StandardGpuResources)"),
        "cgroup": cgroups.version("memory") or "none usable",
        "cores": devices.cpu_count(),
        "cpu_model": devices.cpu_model(),
        "python": platform.python_version(),
        "python_exe": sys.executable,
        "kernel": platform.release(),
        "nvidia_smi": bool(_which("nvidia-smi")),
    }
    if has:
        p = torch.cuda.get_device_properties(0)
        info["gpu_sms"] = p.multi_processor_count
        info["gpu_capability"] = f"{p.major}.{p.minor}"
        if info["gpu_memory_mib"] is None:
            info["gpu_memory_mib"] = p.total_memory // (1 << 20)
    return {"status": "ok", "env": info}


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


# ----------------------------------------------------------------------------- tests

def parse_junit(path: Path) -> dict:
    """Counts (passed, failed, errors, skipped) and each failure's or error's one-line reason."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures = []
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        name = f"{tc.get('classname', '')}::{tc.get('name', '')}"
        kids = {c.tag: c for c in tc}
        if "failure" in kids or "error" in kids:
            c = kids.get("failure", kids.get("error"))
            kind = "failed" if c.tag == "failure" else "errors"
            counts[kind] += 1
            msg = (c.get("message") or (c.text or "").strip() or c.tag).strip().splitlines()
            failures.append({"test": name, "kind": kind, "reason": (msg[0] if msg else c.tag)[:300]})
        elif "skipped" in kids:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return {"counts": counts, "failures": failures}


def parse_verbose(text: str) -> dict:
    """Counts from ``pytest -v`` lines (``path::test PASSED``), for a run cut off before its report."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    key = {"PASSED": "passed", "FAILED": "failed", "ERROR": "errors", "SKIPPED": "skipped", "XFAIL": "skipped",
           "XPASS": "passed"}
    failures = []
    for m in re.finditer(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", text, re.M):
        counts[key[m.group(2)]] += 1
        if m.group(2) in ("FAILED", "ERROR"):
            failures.append({"test": m.group(1), "kind": key[m.group(2)], "reason": "(run cut off: see tests.log)"})
    running = re.findall(r"^(\S+::\S+) $", text, re.M)
    return {"counts": counts, "failures": failures, "running_at_cutoff": running[-1] if running else None}


def tests_part(args) -> dict:
    out_dir = Path(args.workdir)
    junit = out_dir / "junit-gpu.xml"
    junit.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-v", "-m", "gpu", "-p", "no:cacheprovider", f"--junitxml={junit}",
           "-o", "junit_family=xunit1", "-o", "console_output_style=classic"]
    rc, secs = run_logged(cmd, args.deadline_s - 3, Path(args.log))
    if not junit.exists():   # killed at the limit: the verbose log's lines so far
        res = parse_verbose(Path(args.log).read_text(errors="replace"))
        res.update(status="timeout" if rc is None else "error", rc=rc,
                   why=(f"pytest stopped at the part's limit ({args.deadline_s - 3:.0f} s); counts so far"
                        if rc is None else f"pytest exit {rc}, no report"))
        return res
    res = parse_junit(junit)
    res.update(status="ok" if rc in (0, 5) else "failures" if rc == 1 else f"pytest exit {rc}", rc=rc,
               cuda=cuda())
    if not res["cuda"]:
        res["why"] = f"{NO_CUDA}: every CUDA test skipped"
    return res


# ----------------------------------------------------------------------------- profile

_GPU_WORDS = re.compile(r"\b(cuda|gpu|nccl|dataparallel)", re.I)
_CPU_WORDS = re.compile(r"\b(cpu|faiss|hnsw|emulated|fpga|gloo)", re.I)


def classify_rows(df, provenance_device: str | None = None) -> tuple[int, int, dict]:
    """(measured on the GPU, other measured or modelled, {reason: count} of rows not run) of one records
    table. A row is on the GPU when one of its text cells names CUDA/GPU/nccl (device, backend, config,
    system, implementation...), or, naming no device of its own, its step's provenance says cuda (a
    heuristic count: the records have no common device column)."""
    gpu = other = 0
    why: dict[str, int] = {}
    import pandas as pd

    text_cols = [c for c in df.columns if c not in ("why", "reason", "note")
                 and (df[c].dtype == object or pd.api.types.is_string_dtype(df[c]))]
    src = df["source"] if "source" in df else None
    for i in range(len(df)):
        s = str(src.iloc[i]) if src is not None else "measured"
        if s == "not_run":
            w = next((str(df[c].iloc[i]) for c in ("why", "reason") if c in df and isinstance(df[c].iloc[i], str)),
                     "no reason given")
            why[w] = why.get(w, 0) + 1
            continue
        cells = " ".join(str(df[c].iloc[i]) for c in text_cols)
        on_gpu = bool(_GPU_WORDS.search(cells)) or (
            provenance_device is not None and "cuda" in str(provenance_device) and not _CPU_WORDS.search(cells))
        if on_gpu and s == "measured":
            gpu += 1
        else:
            other += 1
    return gpu, other, why


def count_results(results: Path) -> dict:
    """Rows of every records table under ``results`` by where they ran, and the ledger's verdict counts."""
    from bench.core.measuring import records

    gpu = other = 0
    why: dict[str, int] = {}
    per: dict[str, dict] = {}
    for f in sorted(results.rglob("*.parquet")):
        if f.name in ("claims.parquet",) or "history" in f.parts:
            continue
        try:
            df = records.read(f)
            prov = records.read_provenance(f)
        except Exception:  # noqa: BLE001 - a table that cannot be read is counted apart
            continue
        g, o, w = classify_rows(df, (prov or {}).get("device"))
        study = f.relative_to(results).parts[0]
        s = per.setdefault(study, {"gpu": 0, "other": 0, "not_run": 0})
        s["gpu"] += g
        s["other"] += o
        s["not_run"] += sum(w.values())
        gpu, other = gpu + g, other + o
        for k, v in w.items():
            why[k] = why.get(k, 0) + v
    ledger = {}
    lp = results / "claims.parquet"
    if lp.exists():
        led = records.read(lp)
        if "verdict" in led:
            ledger = {str(k): int(v) for k, v in led["verdict"].value_counts().items()}
    return {"rows_gpu": gpu, "rows_other": other, "rows_not_run": sum(why.values()),
            "not_run_reasons": dict(sorted(why.items(), key=lambda kv: -kv[1])), "per_study": per,
            "ledger_verdicts": ledger, "ledger": str(results / "claims.md") if (results / "claims.md").exists() else None}


def _jobs_planned(text: str) -> int | None:
    m = re.search(r"^total\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else None


PROFILE_JOBS = 4


def profile_part(args) -> dict:
    log = Path(args.log)
    cfg = f"experiments/{PROFILE}.yaml"
    sm = [sys.executable, "-m", "snakemake"]
    if not cuda():
        r = subprocess.run([*sm, "-n", "--cores", "1", "--configfile", cfg], cwd=ROOT, capture_output=True, text=True,
                           timeout=max(5, args.deadline_s - 3))
        log.write_text(r.stdout[-20000:] + r.stderr[-20000:])
        if r.returncode:
            return {"status": "error", "why": "snakemake -n failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]}
        return {"status": "not run", "why": f"{NO_CUDA} (the profile was planned only: snakemake -n)",
                "jobs_planned": _jobs_planned(r.stdout), "rows_gpu": 0}
    cores = os.cpu_count() or 1
    run_logged([*sm, "--unlock", "--cores", "1", "--configfile", cfg], 60, log)
    t_left = args.deadline_s - 15     # leave time to count the records
    # PROFILE_JOBS steps side by side, each on its share of the cores (the profile's `threads`): a step
    # takes every core by default, so the jobs would run one after another
    rc, secs = run_logged([*sm, "--cores", str(cores), "--max-threads", str(max(1, cores // PROFILE_JOBS)),
                           "--configfile", cfg, "--keep-going", "--rerun-incomplete"], t_left, log)
    res = count_results(ROOT / "results" / PROFILE)
    text = log.read_text(errors="replace")
    m = re.findall(r"(\d+) of (\d+) steps \((\d+)%\) done", text)
    failed = sorted(set(re.findall(r"Error in rule (\w+):", text)))
    res.update(status="ok" if rc == 0 else "timeout" if rc is None else "failures", rc=rc, snakemake_s=secs,
               jobs_done=f"{m[-1][0]} of {m[-1][1]}" if m else "?", failed_rules=failed)
    if rc is None:
        res["why"] = f"snakemake stopped at the part's time limit ({t_left:.0f} s)"
    return res


# ----------------------------------------------------------------------------- targets

# each target's seconds (its process may run 1.5x that, 2x without CUDA, while the part's time lasts): on one
# H100 with 16 cores, and shrunk without CUDA (2 cores; WindVE and the loaders then have only not-run rows)
TARGET_BUDGET_CUDA = {"trinity-engine": 45, "trinity-build": 30, "chameleon": 35, "windve": 15, "loaders": 20,
                      "espn": 5}
TARGET_BUDGET_CPU = {"trinity-engine": 15, "trinity-build": 8, "chameleon": 15, "windve": 0, "loaders": 0,
                     "espn": 10}


def targets_part(args) -> dict:
    env = json.loads(Path(args.env_json).read_text()).get("env", {}) if args.env_json and Path(
        args.env_json).exists() else {}
    has = cuda()
    mem = env.get("gpu_memory_mib")
    plan = gpu_targets.plan(has, mem * (1 << 20) if mem else None)
    work = Path(args.workdir) / "targets"
    work.mkdir(parents=True, exist_ok=True)
    t_end = time.perf_counter() + args.deadline_s
    rows, timing = [], {}
    for t in args.only or gpu_targets.TARGETS:
        p = dict(plan[t])
        budget = (TARGET_BUDGET_CUDA if has else TARGET_BUDGET_CPU)[t]
        left = t_end - time.perf_counter() - 2
        limit = min(left, budget * (1.5 if has else 2.0))
        out = work / f"{t}.json"
        out.unlink(missing_ok=True)
        if not has and t in gpu_targets.NO_ANCHOR_WITHOUT_CUDA:   # only not-run rows: no process needed
            rows += gpu_targets.run_target(t, p, None, 1)
            continue
        if limit < 5:
            rows.append(gpu_targets.not_run(gpu_targets.LABELS[t], "all", "not run: the targets part's time ran out"))
            continue
        cmd = [sys.executable, str(HERE / "gpu_targets.py"), t, "--out", str(out), "--plan", json.dumps(p)]
        rc, secs = run_logged(cmd, limit, Path(args.log))
        timing[t] = {"wall_s": secs, "limit_s": limit, "rc": rc}
        if rc == 0 and out.exists():
            got = json.loads(out.read_text())
            for r in got:
                r["wall_s"] = secs
                if p.get("note") and not r.get("size_note"):
                    r["size_note"] = p["note"]
            rows += got
        else:
            why = f"timed out after {limit:.0f} s" if rc is None else f"failed (exit {rc}): {_last_error(args.log)}"
            rows.append(gpu_targets.not_run(gpu_targets.LABELS[t], "all", why))
    return {"status": "ok", "cuda": has, "plan": plan, "rows": rows, "timing": timing,
            "kernel_targets": gpu_targets.KERNEL_TARGETS}


def _last_error(log: str) -> str:
    try:
        lines = [ln for ln in Path(log).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "?"
    errs = [ln for ln in lines if re.match(r"^\w*(Error|Exception)\b|^\w+Error:", ln)]
    return (errs[-1] if errs else lines[-1] if lines else "?")[:300]


PARTS = {"env": env_part, "tests": tests_part, "profile": profile_part, "targets": targets_part}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=sorted(PARTS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--workdir", default="gpu-check")
    ap.add_argument("--deadline-s", type=float, default=600)
    ap.add_argument("--env-json")
    ap.add_argument("--only", nargs="*", help="targets: run only these")
    a = ap.parse_args(argv)
    res = PARTS[a.part](a)
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
