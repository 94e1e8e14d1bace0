"""The loaders study's rows of the claims ledger: each headline finding of Moving Stuff Around and the
issue's targets, judged on the records with intervals (bootstrap over measured steps, or over the
memory readings of the measured steps)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.judging import claims

from ..core.judging import intervals

from ..core.measuring import sequential
from . import analysis as A
from . import paper_values as P
from .params import Params

RECORDS = ("train", "options")
STUDY = "loaders"


def _device(df) -> str:
    """Where the runs of these records ran (their ``device`` column; CPU for records from before it)."""
    dev = set(df["device"].dropna()) if "device" in df else set()
    if "cuda" in dev:
        gpus = df.attrs.get("provenance", {}).get("gpus_visible")
        return f"CUDA ({gpus} GPU{'s' if gpus != 1 else ''})" if gpus else "CUDA"
    return "CPU"


def _not_run_why(df, parallel: str, replicas: int) -> str:
    """The reason the records give for grid points at ``replicas`` that did not run (or that none is there)."""
    r = A.runs(df[(df.option == "grid") & (df.parallel == parallel) & (df.replicas == replicas)])
    why = sorted(set(r.get("why", []).dropna()) - {""}) if len(r) else []
    return "; ".join(why) or f"no {parallel} run with {replicas} replicas in the records"


def _scale(df, what: str) -> str:
    n_docs, mb = A.collection(df)
    return (f"{what}; ours: {_device(df)}, {n_docs} docs ({mb:.0f} MB), "
            f"cut-down MiniLM; paper: GTX 1080 Ti GPUs, DistilBERT, 3.2M docs (22 GB)")


def _ddp_over_dp_paper(loader: str) -> str:
    """The paper's DDP-over-DP gain at 2 GPUs (Table 1), computed from its two values."""
    t = P.TABLE1.get(loader)
    return f"{100 * (t[('ddp', 2)] / t[('dp', 2)] - 1):+.1f}% (2 GPUs)" if t else "— (not in the paper)"


def _ratio_config(df, st, name: str, a: dict, b: dict) -> claims.Config:
    """One configuration of a claim: the samples/s ratio of run ``a`` over run ``b`` with its interval
    (rounds in fresh processes resampled first where the records have several)."""
    e, lo, hi = _tput_ratio(st, a, b, _level(df, a, b))
    return claims.Config(name, e, (lo, hi), A.busy(df, A.run_id(**a), A.run_id(**b)))


def _enough_rounds(c: claims.Config, rounds: int) -> claims.Config:
    """A configuration measured in fewer than analysis.MIN_ROUNDS rounds keeps its estimate but no interval, so it
    decides nothing (quiet tiny runs read 0.70 [0.56, 0.82] from 2 rounds, then 0.99 [0.78, 1.11] from 4). Every
    throughput row of the grid follows it: in-memory-not-faster's 1-replica runs, 2 rounds on tiny, read
    0.90-1.04 with intervals wholly outside its band in two quiet runs of three and straddling it in the third."""
    if rounds >= A.MIN_ROUNDS:
        return c
    name = f"{c.name} ({rounds} rounds: too few for an interval)" if c.name else \
        f"{rounds} rounds: too few for an interval"
    return claims.Config(name, c.ours, (None, None), c.busy)


def _rounds_of(st, a: dict, b: dict) -> int:
    """The rounds (fresh runs) both runs of a ratio have: the fewer of the two."""
    return min(len(np.unique(A.rounds(st, **a))), len(np.unique(A.rounds(st, **b))))


def _level(df, a: dict, b: dict) -> float:
    """The interval's level: the two-stage design's per-look level for the runs it covers (DP and DDP at 2
    replicas), 95% elsewhere."""
    return sequential.LEVEL if A.in_design(df, A.run_id(**a), A.run_id(**b)) else 0.95


def _tput_ratio(st, a: dict, b: dict, level: float = 0.95):
    """Median samples/s of run ``a`` over run ``b``: rounds (fresh processes) resampled first, then steps."""
    return intervals.ratio_ci(A.tput(st, **a), A.tput(st, **b), level=level,
                           groups=(A.rounds(st, **a), A.rounds(st, **b)))


def _interval_words(st, what: str = "", level: float = 0.95, rounds: int | None = None) -> str:
    """What the interval resamples; ``what``: the step's name when it runs each configuration once;
    ``level`` below 0.95: runs of the DDP/DP two-stage design, drawn at its per-look level; ``rounds``: the
    rounds the row's own runs have (the step's stage 2 adds rounds to some runs only), else the step's."""
    n = A.n_rounds(st) if rounds is None else rounds
    if 1 < n < A.MIN_ROUNDS:
        return (f"{n} rounds of fresh processes: fewer than {A.MIN_ROUNDS}, too few for an interval (a bootstrap of "
                f"{n} rounds has {n * (n + 1) // 2} outcomes), so the row keeps its estimate and decides nothing")
    if level < 0.95:
        return (f"bootstrap {level:.3g} interval over up to {n} rounds of fresh processes, then their measured "
                "steps (runs of the DDP/DP two-stage design: its per-look level)")
    return (f"bootstrap 95% interval over {n} rounds of fresh processes, then their measured steps" if n > 1 else
            "bootstrap 95% interval over the measured steps of one run per configuration (no run-to-run repeat: "
            + (f"the {what} step runs each configuration once)" if what else "loaders.rounds = 1)"))


def _design_words(df, st, loaders: list[str]) -> str:
    """The DDP/DP interval under the train step's two-stage design, for the row's ``interval``."""
    if "stage" not in df or not df["stage"].notna().any():
        return _interval_words(st)
    again = sorted(set(df[df["stage"] == 2].loader)) if (df["stage"] == 2).any() else []
    n1 = int(df[df["stage"] == 1]["round"].nunique()) if "round" in df else 1
    staged = (f"stage 2 ({n1} more rounds of DP and DDP) ran for {', '.join(again)}, whose stage-1 interval "
              "straddled 1" if again else "stage 1 decided every loader")
    per = "; ".join(f"{l} {A.n_rounds(st[st.loader == l])} rounds" for l in loaders)
    return (f"bootstrap interval over rounds of fresh processes (resampled first), then their measured steps, "
            f"at {sequential.LEVEL:.3g} a look: a fixed two-stage design ({n1} rounds, then {n1} more for a "
            f"loader whose interval straddles 1), so 95% over both looks; {staged}; {per}")


def _configs_at(df, parallel: str, replicas: int) -> bool:
    return bool(len(A.runs(df[(df.option == "grid") & (df.parallel == parallel) & (df.replicas == replicas)
                              & (df.status == "ok")])))


def _throughput_claims(df, st) -> list[claims.Claim]:
    out = []
    pairs = [(f"{par.upper()}, 1 replica", {"loader": "ir_datasets", "parallel": par, "replicas": 1},
              {"loader": "in-memory", "parallel": par, "replicas": 1}) for par in ("ddp", "dp") if _configs_at(df, par, 1)]
    rounds = [_rounds_of(st, a, b) for _, a, b in pairs]
    one = [_enough_rounds(_ratio_config(df, st, name, a, b), n) for (name, a, b), n in zip(pairs, rounds)]
    out.append(claims.claim(STUDY, "in-memory-not-faster", "in-memory is not faster: ir_datasets within about 2% of it "
                            "(1 GPU; DDP and DP)", "-1.25% (DDP) / +0.8% (DP)", configs=one, band=(0.98, 1.02),
                            unit="x in-memory samples/s", scale=_scale(df, "1 replica, DDP and DP"),
                            interval=_interval_words(st, rounds=min(rounds, default=None)),
                            reason="median per-step samples/s ratio; 'within about 2%' is a two-sided band [0.98, 1.02], "
                                   "judged over both parallelisms the paper reports"))
    n = A.max_replicas(df)
    if n < 2:
        why = _not_run_why(df, "ddp", 2)
        out += [claims.claim(STUDY, cid, text, pv, ours=None, source="not_run", unit="x", scale=_scale(df, "2 replicas"),
                        reason=f"not run: {why}") for cid, text, pv in (
            ("irds-ahead-multi-gpu", "ir_datasets is ahead of in-memory with two or more GPUs", "+2.33% (DDP, 2 GPUs)"),
            ("ddp-faster-than-dp", "DDP is slightly faster than DP (GIL), every loader", _ddp_over_dp_paper("ir_datasets")))]
    if n >= 2:
        a, b = {"loader": "ir_datasets", "parallel": "ddp", "replicas": n}, {"loader": "in-memory", "parallel": "ddp", "replicas": n}
        n2 = _rounds_of(st, a, b)
        c = _enough_rounds(claims.Config.of("", _tput_ratio(st, a, b, _level(df, a, b))), n2)
        e, (lo, hi) = c.ours, c.ci
        out.append(claims.claim(STUDY, "irds-ahead-multi-gpu", "ir_datasets is ahead of in-memory with two or more GPUs",
                           "+2.33% (DDP, 2 GPUs)", ours=e, ci=(lo, hi), threshold=1.0, unit="x in-memory samples/s",
                           scale=_scale(df, f"DDP, {n} replicas"), target=0.95,
                           interval=_interval_words(st, level=_level(df, a, b), rounds=n2),
                           machine_busy=A.busy(df, f"ir_datasets/ddp/{n}", f"in-memory/ddp/{n}"),
                           reason="median per-step samples/s ratio; passes when the whole interval is >= 1; the same "
                                  "measurement judges the harness's target 'ir_datasets >= 95% of in-memory's "
                                  "samples/s' (one measurement, one row)"))
        loaders = [l for l in A.grid_loaders(df) if l in P.TABLE1]
        r2 = A.DDP_DP_REPLICAS
        cfg = [_enough_rounds(_ratio_config(df, st, l, {"loader": l, "parallel": "ddp", "replicas": r2},
                                            {"loader": l, "parallel": "dp", "replicas": r2}),
                              A.n_rounds(st[st.loader == l])) for l in loaders]
        paper = "; ".join(f"{l} {_ddp_over_dp_paper(l)}" for l in loaders)
        out.append(claims.claim(STUDY, "ddp-faster-than-dp", "DDP is slightly faster than DP (GIL), for every loader "
                                "(Table 1, 2 GPUs)", paper, configs=cfg, threshold=1.0, unit="x DP samples/s",
                                scale=_scale(df, "2 replicas"), interval=_design_words(df, st, loaders),
                                reason=f"DDP over DP ({_impls(df)}), median per-step samples/s, per loader; the paper "
                                       "shows DDP ahead for all three loaders, so the claim covers all of them; also "
                                       "the harness's target 'DDP at least as fast as DP' (same threshold, same row)"))
    return out


def _impls(df) -> str:
    """What ran as DP and DDP, from the records."""
    if "implementation" not in df:
        return "DP: threads on CPU, DDP: processes over gloo"
    return ", ".join(A.implementations(df))


def _corpus_premise(runs: pd.DataFrame, run_id: str) -> claims.Premise:
    """The premise every memory claim of the paper stands on: the corpus dominates in-memory's memory (40-45 GB
    of corpus there); here every process also holds torch and the model. One premise for all the memory rows,
    so a failed one reads "out of reach" in each of them alike."""
    share = (runs.loc[run_id].loader_pss_bytes / runs.loc[run_id].pss_mean_bytes
             if run_id in runs.index else np.nan)
    return claims.premise("the corpus dominates in-memory's memory (the paper: 40-45 GB of corpus)", share, 0.5,
                          ">=", what="the corpus's share of in-memory's PSS", row=f"the {run_id} run")


def _memory_claims(df) -> list[claims.Claim]:
    out = []
    n = A.max_replicas(df)
    runs = A.per_run(A.runs(df[df.option == "grid"]))
    for cid, text, repl in (("irds-memory-7-14pct", "ir_datasets needs 7-14% of in-memory's memory", 1),
                            ("target-irds-15pct-pss", "target: ir_datasets at no more than 15% of in-memory's summed PSS", n or 1)):
        a, b = f"ir_datasets/ddp/{repl}", f"in-memory/ddp/{repl}"
        e, lo, hi = intervals.ratio_ci(A.mem(df, a), A.mem(df, b))
        thr = 0.14 if cid.startswith("irds") else 0.15
        corpus = runs.loc[b].loader_pss_bytes / runs.loc[b].pss_mean_bytes if b in runs.index else np.nan
        lf = (runs.loc[a].loader_pss_bytes / runs.loc[b].loader_pss_bytes
              if a in runs.index and b in runs.index else np.nan)
        reason = (f"summed PSS (readings of the measured steps) ratio; the corpus is {100 * corpus:.0f}% of "
                  f"in-memory's PSS here (every process also holds torch and the model); the loaders' own "
                  f"footprint ratio (PSS after opening minus before) is {lf:.3f}")
        pre = _corpus_premise(runs, b)
        out.append(claims.claim(STUDY, cid, text, "7-14% (2.79-6.72 GB vs 40-45 GB)" if repl == 1 else "<= 15%",
                           ours=e, ci=(lo, hi), threshold=thr, direction="<=", unit="x in-memory PSS",
                           scale=_scale(df, f"DDP, {repl} replica(s)"), reason=reason, premises=[pre],
                           interval="memory readings during one run (memory varies little between runs)",
                           machine_busy=A.busy(df, a, b)))
    if n >= 2:
        e, lo, hi = intervals.ratio_ci(A.mem(df, f"in-memory/ddp/{n}"), A.mem(df, "in-memory/ddp/1"))
        lin = n * 0.9
        a, b = f"in-memory/ddp/{n}", "in-memory/ddp/1"
        corpus = (runs.loc[a].loader_pss_bytes / runs.loc[b].loader_pss_bytes
                  if a in runs.index and b in runs.index else np.nan)
        out.append(claims.claim(STUDY, "inmem-ddp-memory-linear",
                           "with DDP, in-memory's memory grows linearly with the ranks (OOM beyond 2 GPUs)",
                           "80.51 GB at 2 GPUs = 2.0x 1 GPU; OOM at 4 and 8", ours=e, ci=(lo, hi), threshold=lin,
                           unit=f"x PSS of 1 replica ({n} replicas)", scale=_scale(df, f"DDP, 1 vs {n} replicas"),
                           machine_busy=A.busy(df, f"in-memory/ddp/{n}", "in-memory/ddp/1"),
                           premises=[_corpus_premise(runs, b)],
                           interval="memory readings during one run per configuration",
                           reason=f"summed PSS ratio; linear = {n}x, passes at >= {lin:.1f}x; the corpus copies alone "
                                  f"(each rank's PSS growth when loading) grow {corpus:.2f}x, the rest is shared library "
                                  "pages PSS splits between ranks. OOM beyond 2 replicas needs a corpus near the "
                                  "machine's memory (small/paper profiles, memory cap)"))
    ok = runs[runs.status == "ok"] if len(runs) else runs
    if len(ok) and "pss_smaps_max_reldiff" in ok:
        d = ok.pss_smaps_max_reldiff.dropna().to_numpy()
        e = lo = hi = float(np.max(d)) if len(d) else float("nan")
        out.append(claims.claim(STUDY, "target-pss-agrees-with-smaps",
                           "target: summed PSS (psutil) agrees within 10% with /proc/<pid>/smaps summed over the same tree",
                           "— (a check of our method)", ours=e, ci=(lo, hi), threshold=0.10, direction="<=",
                           unit="max relative difference", scale=f"{len(d)} runs",
                           machine_busy=False, interval=f"exact: the largest difference over the {len(d)} runs "
                           "observed (a maximum over every run, not an estimate)", reason="largest distance, relative, of psutil's summed PSS outside the bracket of two "
                                  "/proc/<pid>/smaps readings (every mapping's Pss summed by our code, just before and "
                                  "after psutil's, per process) in any run's measured steps. psutil reads "
                                  "smaps_rollup, so the check compares two files of the kernel's one PSS accounting: "
                                  "it checks psutil's reading and our tree summation, not the kernel; the unit test "
                                  "checks a fixed process tree"))
    return out


def _option_replicas(op) -> int:
    r = A.runs(op)
    return int(r.replicas.max()) if len(r) else 0


def _option_claims(op) -> list[claims.Claim]:
    st = A.steps(op)
    runs = A.runs(op)
    have = set(runs[runs.status == "ok"].run_id)
    base = A.tput(st, run_id="baseline=-")
    out = []
    workers = sorted(int(r.split("=")[1]) for r in have if r.startswith("num_workers="))
    n = _option_replicas(op)
    setting = f"ours at {n} replicas, the paper's 4 GPUs"

    def ratio(rid):
        return intervals.ratio_ci(A.tput(st, run_id=rid), base,
                               groups=(A.rounds(st, run_id=rid), A.rounds(st, run_id="baseline=-")))
    scale = _scale(op, f"Table 3 options on ir_datasets DDP, {n} replicas against the paper's 4 GPUs")
    iv = _interval_words(st, "options")
    if 1 in workers:
        e, lo, hi = ratio("num_workers=1")
        out.append(claims.claim(STUDY, "one-worker-helps", f"one DataLoader worker adds samples/s (Table 3; {setting})",
                           "+3.8% (146.96 vs 141.62)", ours=e, ci=(lo, hi), threshold=1.0, unit="x baseline samples/s",
                           scale=scale, interval=iv, machine_busy=A.busy(op, "num_workers=1", "baseline=-"),
                           reason="median per-step ratio"))
    if workers:
        w = max(workers)
        e, lo, hi = ratio(f"num_workers={w}")
        out.append(claims.claim(STUDY, "eight-workers-hurt", f"eight workers take samples/s away (Table 3; {setting})",
                           "-6.5% (132.37 vs 141.62)", ours=e, ci=(lo, hi), threshold=1.0, direction="<=",
                           unit=f"x baseline ({w} workers)", scale=scale, interval=iv,
                           machine_busy=A.busy(op, f"num_workers={w}", "baseline=-"),
                           premises=[claims.premise("8 DataLoader workers per rank", w, 8, ">=",
                                                    what="the most workers run here (2 cores)")],
                           reason=f"largest worker count run here is {w}"))
    out.append(_pin_claim(op, st, have, base, scale, setting))
    if "ramdisk=yes" in have:
        e, lo, hi = ratio("ramdisk=yes")
        out.append(claims.claim(STUDY, "ramdisk-no-gain", f"RAMDISK gains nothing (Table 3; {setting})",
                           "-0.6% (140.81 vs 141.62)", ours=e, ci=(lo, hi), band=(0.98, 1.02),
                           unit="x baseline samples/s", scale=scale, interval=iv,
                           machine_busy=A.busy(op, "ramdisk=yes", "baseline=-"),
                           reason="'gains nothing' is a two-sided band: within 2% of the baseline either way"))
    return out


def _pin_claim(op, st, have: set, base, scale: str, setting: str) -> claims.Claim:
    """pin_memory plus workers against the baseline (Table 3's best row), from the records: measured on
    CUDA, not run elsewhere (pin_memory is a no-op without CUDA, so those rows are recorded as not run)."""
    text, pv = f"pin_memory plus workers is best (Table 3; {setting})", "+4.0% (147.16)"
    runs = A.runs(op)
    applied = runs[runs["pin_memory_applied"].fillna(False).astype(bool)].run_id if "pin_memory_applied" in runs else []
    pinned = sorted(r for r in have & set(applied) if r.startswith("pin_memory+num_workers="))
    if not pinned:
        why = sorted(set(runs[runs.run_id.str.startswith("pin_memory")].get("why", []).dropna()) - {""})
        return claims.claim(STUDY, "pin-memory-plus-workers-best", text, pv, ours=None, source="not_run",
                       unit="x baseline", scale=scale, reason="; ".join(why) or "no pin_memory run in the records")
    rid = max(pinned, key=lambda r: float(np.median(A.tput(st, run_id=r))))
    others = sorted(r for r in have if r != rid)
    cfg = [claims.Config.of(f"over {r}", intervals.ratio_ci(A.tput(st, run_id=rid), A.tput(st, run_id=r),
                                                           groups=(A.rounds(st, run_id=rid), A.rounds(st, run_id=r))),
                            A.busy(op, rid, r)) for r in others]
    return claims.claim(STUDY, "pin-memory-plus-workers-best", text, pv, configs=cfg, threshold=1.0,
                   unit="x samples/s", scale=scale, interval=_interval_words(st, "options"),
                   reason=f"{rid} (the best pinned run by median) over every other option and the baseline: best "
                          "only if it is ahead of each")


def build(data: dict[str, pd.DataFrame], params: Params, profile: str) -> list[claims.Claim]:
    """The ledger rows from the records (``train``, and ``options`` when given); ``params`` and ``profile``
    change no verdict (the records carry what ran)."""
    df = data["train"]
    st = A.steps(A.grid(df))
    rows = _throughput_claims(df, st) + _memory_claims(df)
    if data.get("options") is not None:
        rows += _option_claims(data["options"])
    return rows
