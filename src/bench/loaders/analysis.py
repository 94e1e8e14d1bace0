"""The numbers the figures and the claims of the loaders study (Moving Stuff Around) share, derived from
records only (never from new runs): per-step samples/s of a run, memory readings per run, the grid's
configurations and loaders, what ran (device, implementation) and where the machine was busy.

The estimates a ledger row judges and the figure drawing it both come from here, so the figure draws the
row's interval on the row's base: samples/s is the paper's "average number of samples processed per second"
(section 3: the mean over measured steps), memory the median of the readings during the measured steps;
every interval resamples the runs' fresh processes first (one cluster per run and round,
:func:`clusters`), then the steps or readings within each."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.judging import fidelity, intervals

GB = 1e9
TPUT_STAT = np.mean     # section 3: "the average number of samples processed per second"
MEM_STAT = np.median    # memory held during the measured steps: its typical reading
CLUSTER_BY = ("run_id", "round")   # one fresh set of processes per run of a configuration and round


def steps(df: pd.DataFrame) -> pd.DataFrame:
    """Measured steps of every run: samples of all ranks over the slowest rank's step time; the
    parts (wait / copy / compute) averaged over ranks."""
    s = df[(df.kind == "step") & (df.phase == "measured")]
    if "round" not in s:
        s = s.assign(round=0)
    if "machine_busy" not in s:   # rows of a step still running (its stage-1 look): the skeleton adds it later
        s = s.assign(machine_busy=False)
    keys = ["run_id", "round", "loader", "parallel", "replicas", "option", "option_value"]
    keys += [c for c in ("process_uid", "device", "gpus", "source") if c in s]
    g = s.groupby(keys + ["step"], dropna=False)
    out = g.agg(step_s=("step_s", "max"), samples=("samples", "sum"), wait_s=("wait_s", "mean"),
                copy_s=("copy_s", "mean"), compute_s=("compute_s", "mean"),
                machine_busy=("machine_busy", "any")).reset_index()
    out["samples_per_s"] = out.samples / out.step_s
    return out


def runs(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.kind == "run"].copy()


def per_run(r: pd.DataFrame) -> pd.DataFrame:
    """Run rows indexed by ``run_id``, one per run: numeric columns averaged over its rounds (the first
    round's values elsewhere)."""
    if not len(r):
        return r.set_index("run_id")
    num = r.groupby("run_id").mean(numeric_only=True)
    first = r.groupby("run_id").first()
    return first.assign(**{c: num[c] for c in num.columns})


MIN_ROUNDS = intervals.MIN_PROCESSES   # fewer fresh-process rounds cannot show run-to-run noise


def _mask(st: pd.DataFrame, sel: dict) -> np.ndarray:
    m = np.ones(len(st), bool)
    for k, v in sel.items():
        m &= (st[k] == v).to_numpy()
    return m


def clusters(rows: pd.DataFrame) -> np.ndarray:
    """The fresh processes of each row: its step process joined with its run and round
    (:func:`bench.core.judging.intervals.process_of`), unique across configurations and options."""
    return intervals.process_of(rows, by=[c for c in CLUSTER_BY if c in rows])


def rounds(st: pd.DataFrame, **sel) -> np.ndarray:
    """The cluster (a fresh run of one configuration in one round) of each per-step value :func:`tput`
    returns."""
    return clusters(st.loc[_mask(st, sel)])


def n_rounds(st: pd.DataFrame) -> int:
    """How many rounds of fresh runs the steps come from (1 for records without ``round``)."""
    return int(st["round"].nunique()) if "round" in st and len(st) else 1


def grid(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the Tables 1-2 grid (not the options)."""
    return df[df.option == "grid"]


def grid_loaders(df: pd.DataFrame) -> list[str]:
    """The grid's loaders in the order they ran."""
    return list(dict.fromkeys(grid(df).loader))


def configs(df: pd.DataFrame) -> list[tuple[str, int]]:
    """The grid's (parallel, replicas) that have a run row, by replicas then DP before DDP."""
    r = runs(grid(df))
    have = set(zip(r.parallel, r.replicas.astype(int)))
    return [(p, n) for n in sorted({n for _, n in have}) for p in ("dp", "ddp") if (p, n) in have]


def max_replicas(df: pd.DataFrame, parallel: str = "ddp") -> int:
    """The most replicas of a grid run of ``parallel`` that ran (0 when none did)."""
    r = runs(df[(df.option == "grid") & (df.parallel == parallel) & (df.status == "ok")])
    return int(r.replicas.max()) if len(r) else 0


def oom(df: pd.DataFrame, cfg: tuple[str, int], loader: str) -> bool:
    """Whether the grid run of ``loader`` at ``cfg`` was killed by the memory cap."""
    r = runs(df[(df.option == "grid") & (df.loader == loader) & (df.parallel == cfg[0]) & (df.replicas == cfg[1])])
    return bool(len(r)) and (r.status == "oom").any()


def tput(st: pd.DataFrame, **sel) -> np.ndarray:
    """Per-step samples/s of the run(s) matching ``sel`` (column=value)."""
    return st.loc[_mask(st, sel), "samples_per_s"].to_numpy(float)


def tput_estimate(st: pd.DataFrame, level: float = 0.95, **sel) -> intervals.Estimate:
    """Average samples/s of the runs matching ``sel``, its interval over their rounds (fresh processes)
    first, then their steps."""
    return intervals.bootstrap_ci(tput(st, **sel), TPUT_STAT, level=level, groups=rounds(st, **sel))


def tput_ratio(st: pd.DataFrame, a: dict, b: dict, level: float = 0.95) -> intervals.Estimate:
    """Average samples/s of the runs ``a`` over the runs ``b``: rounds resampled first, then steps; the
    estimate carries how many fresh processes the fewer side had."""
    return intervals.ratio_ci(tput(st, **a), tput(st, **b), TPUT_STAT, level=level,
                              groups=(rounds(st, **a), rounds(st, **b)))


def on_cuda(rows: pd.DataFrame) -> bool:
    """Whether the measured rows ran on CUDA (their ``device``)."""
    ok = rows[rows["source"] == "measured"] if "source" in rows else rows
    return "device" in ok and len(ok) > 0 and ok["device"].astype(str).str.startswith("cuda").all()


def hardware(df: pd.DataFrame, *run_ids: str) -> frozenset[str]:
    """Where the measured steps of these runs ran (:func:`bench.core.judging.fidelity.ran_on`): a GPU, and
    how many, only where every one of them ran on CUDA."""
    rows = df[df.run_id.isin(run_ids) & (df.kind == "step")] if "kind" in df else df[df.run_id.isin(run_ids)]
    return fidelity.ran_on(rows)


def wait_share(st: pd.DataFrame, par: str, n: int, loaders: list[str]) -> dict[str, float]:
    """% of the mean step time spent waiting for the DataLoader's batch, per loader (Figure 1)."""
    g = st[(st.parallel == par) & (st.replicas == n)].groupby("loader")[["wait_s", "copy_s", "compute_s"]].mean()
    return {l: 100 * g.loc[l, "wait_s"] / g.loc[l].sum() for l in loaders if l in g.index}


def wait_share_estimate(st: pd.DataFrame, **sel) -> intervals.Estimate:
    """The share of the step spent waiting for the DataLoader's batch (Figure 1's quantity) over the runs
    matching ``sel``: the mean over steps, rounds resampled first."""
    m = _mask(st, sel)
    share = (st.loc[m, "wait_s"] / st.loc[m, "step_s"]).to_numpy(float)
    return intervals.bootstrap_ci(share, np.mean, groups=clusters(st.loc[m]))


def _mem_rows(df: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """Memory readings of a run while every rank ran its measured steps (none: nothing, never readings of
    another phase)."""
    m = df[(df.kind == "memory") & (df.run_id == run_id) & (df.phase == "measured")]
    return m[(m.pss_bytes > 0) & ((m.n_procs > 0) if "n_procs" in m else True)]   # a tree gone or exiting


def mem(df: pd.DataFrame, run_id: str, col: str = "pss_bytes") -> np.ndarray:
    """Memory readings of a run during its measured steps."""
    return _mem_rows(df, run_id)[col].to_numpy(float)


def mem_ratio(df: pd.DataFrame, a: str, b: str, col: str = "pss_bytes") -> intervals.Estimate:
    """Median memory of run ``a`` over run ``b`` during their measured steps: rounds (fresh processes)
    resampled first, then readings."""
    ra, rb = _mem_rows(df, a), _mem_rows(df, b)
    return intervals.ratio_ci(ra[col].to_numpy(float), rb[col].to_numpy(float), MEM_STAT,
                              groups=(clusters(ra), clusters(rb)))


def corpus_share(df: pd.DataFrame, run_id: str) -> intervals.Estimate:
    """The corpus's share of a run's memory (the loader's own PSS growth when loading over the run's mean
    summed PSS during its measured steps), one value per round, with a t interval over the rounds."""
    r = runs(df)
    r = r[(r.run_id == run_id) & (r.status == "ok")] if "status" in r else r[r.run_id == run_id]
    if not len(r) or "loader_pss_bytes" not in r:
        return intervals.Estimate(float("nan"), float("nan"), float("nan"), 0)
    return intervals.t_interval((r.loader_pss_bytes / r.pss_mean_bytes).to_numpy(float))


def run_id(loader: str, parallel: str, replicas: int) -> str:
    return f"{loader}/{parallel}/{replicas}"


def table(df: pd.DataFrame, value: str) -> pd.DataFrame:
    """loader x (parallel, replicas) of a run-row column; OOM cells as NaN with status kept apart."""
    r = runs(grid(df))
    return r.pivot_table(index="loader", columns=["replicas", "parallel"], values=value, aggfunc="first")


def busy(df: pd.DataFrame, *run_ids: str) -> bool:
    """Whether the machine was busy during any of these runs (the records' quiet check)."""
    r = df[df.run_id.isin(run_ids)]
    return bool(r.machine_busy.any()) if "machine_busy" in r else False


def implementations(df: pd.DataFrame) -> list[str]:
    """What ran as DP and DDP, from the run rows' ``implementation`` (empty for records without it)."""
    if "implementation" not in df:
        return []
    return sorted(set(runs(df).implementation.dropna()))


def collection(df: pd.DataFrame) -> tuple[object, float]:
    """(documents, MB) of the collection the records were measured on (``?`` when not recorded)."""
    coll = df.attrs.get("provenance", {}).get("collection", {})
    return coll.get("n_docs", "?"), coll.get("collection_bytes", 0) / 1e6


DDP_DP_REPLICAS = 2   # Table 1's DDP-over-DP setting (2 GPUs): the configurations the two-stage design covers


def ddp_dp_run_ids(loader: str) -> tuple[str, str]:
    """The DDP and DP runs of ``loader`` that the DDP-over-DP claim compares."""
    return run_id(loader, "ddp", DDP_DP_REPLICAS), run_id(loader, "dp", DDP_DP_REPLICAS)


def in_design(df: pd.DataFrame, *run_ids: str) -> bool:
    """Whether any of these grid runs is one the train step's two-stage design covers (DP or DDP at
    :data:`DDP_DP_REPLICAS`, in records that carry ``stage``): its interval is then drawn at the design's
    level per look (:data:`bench.core.measuring.sequential.LEVEL`), whichever stage the step stopped at."""
    if "stage" not in df or not df["stage"].notna().any():
        return False
    return any(rid.split("/")[1:] in (["ddp", str(DDP_DP_REPLICAS)], ["dp", str(DDP_DP_REPLICAS)]) for rid in run_ids)


def level_of(df: pd.DataFrame, *run_ids: str) -> float:
    """The level a row's interval over these runs is drawn at (claims and figures alike): the two-stage
    design's per-look level where the runs are ones it covers, 95% elsewhere."""
    from ..core.measuring import sequential

    return sequential.LEVEL if in_design(df, *run_ids) else 0.95


def mem_estimate(df: pd.DataFrame, run_id: str, col: str = "pss_bytes") -> intervals.Estimate:
    """Median memory of a run during its measured steps, rounds resampled first, then readings."""
    m = _mem_rows(df, run_id)
    return intervals.bootstrap_ci(m[col].to_numpy(float), MEM_STAT, groups=clusters(m))


def ddp_over_dp(st: pd.DataFrame, loader: str, level: float = 0.95) -> intervals.Estimate:
    """DDP over DP samples/s of ``loader`` at :data:`DDP_DP_REPLICAS`: rounds of fresh runs resampled first,
    then steps; the same computation for the step's stage-1 look, the claim and the figure."""
    a = {"loader": loader, "parallel": "ddp", "replicas": DDP_DP_REPLICAS}
    b = {"loader": loader, "parallel": "dp", "replicas": DDP_DP_REPLICAS}
    return tput_ratio(st, a, b, level)
