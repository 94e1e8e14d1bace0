"""What ESPN's figures and claims both compute from the records (paper sections 4.3, 5.2-5.4): the measured
end-to-end rows per disk, back end and budget (Tables 4/5, Figure 1), the hit-rate rows per corpus
(Figure 7), equation 4's table next to the observed knee (Figures 8/9), and the engine our O_DIRECT reader
ran with (from the iops records, never from the machine the claims run on)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.judging import intervals
from ..core.judging.intervals import Estimate
from . import paper_values as PV
from .system import eq4
from .system.eq4 import ESPN_BATCH

BLOCK = 4096   # the 4 KiB random reads the IOPS are measured with: bandwidth = IOPS x 4 KiB
N_BOOT = 2000  # bootstrap resamples per interval, of the claims and the figures alike (read at call time)


def build_meta(df: pd.DataFrame) -> dict:
    """The build's metadata recorded in a record set's provenance (empty when absent)."""
    return df.attrs.get("provenance", {}).get("build", {})


def ssd_key(ssd, latency_us=None) -> str:
    """The disk a row ran on, one key per device: ``native``, ``emulated`` (the IOPS cap) or
    ``emulated+<latency>us`` (the latency-emulated SSD at that per-read latency)."""
    if ssd != "emulated" or latency_us is None or latency_us != latency_us:
        return "native" if ssd is None or ssd != ssd else str(ssd)
    return f"emulated+{float(latency_us):g}us"


def with_ssd(df: pd.DataFrame) -> pd.DataFrame:
    """e2e rows with ``ssd`` filled (``native`` where the column or the value is missing; one key per
    emulated device, :func:`ssd_key`) and ``process`` (which of the step's fresh processes measured the
    row; 0 where the step ran in one)."""
    ssd = df["ssd"].fillna("native") if "ssd" in df else pd.Series("native", index=df.index)
    if "ssd_latency_us" in df:
        ssd = pd.Series([ssd_key(a, b) for a, b in zip(ssd, df["ssd_latency_us"])], index=df.index)
    return df.assign(ssd=ssd, process=df["process"] if "process" in df else 0)


def emulated_keys(df: pd.DataFrame) -> list[str]:
    """The emulated devices the rows ran on (keys of :func:`ssd_key`), slowest last."""
    keys = [k for k in with_ssd(df).ssd.unique() if k != "native"]
    return sorted(keys, key=lambda k: float(k.split("+")[1][:-2]) if "+" in k else -1.0)


def ssd_words(df: pd.DataFrame, key: str) -> str:
    """What a device key means, from its rows: the emulation, the latency it states and the one it measured,
    its parallelism and measured rates."""
    d = with_ssd(df)
    d = d[d.ssd == key]
    if key == "native" or d.empty:
        return "this machine's disk"
    r = d.iloc[0]
    if key.startswith("emulated+"):
        rates = ""
        if "ssd_qd1_iops" in d and r.get("ssd_qd1_iops") == r.get("ssd_qd1_iops") and r.get("ssd_qd1_iops"):
            rates = f"; measured QD1 {r.ssd_qd1_iops:,.0f}, QD32 {r.ssd_qd32_iops:,.0f} 4 KiB IOPS"
        return (f"emulated SSD: FUSE pass-through, +{float(r.ssd_latency_us):g} µs per read{_measured_latency(d)}, "
                f"{int(r.ssd_threads)} reads in flight{rates}")
    iops = r.get("ssd_read_iops")
    return "emulated SSD: read-IOPS cap" + (f" {int(iops):,}" if iops == iops and iops else "")


def _measured_latency(d: pd.DataFrame) -> str:
    """What the latency device measured when calibrated (medians over the step's processes), or nothing in
    records from before its calibration."""
    if "ssd_added_us" not in d or d.ssd_added_us.isna().all():
        return ""
    per = d.dropna(subset=["ssd_added_us"]).groupby("process")[["ssd_added_us", "ssd_read_us", "ssd_disk_read_us",
                                                                "ssd_wait_us", "ssd_calibrated"]].first()
    med = per.median(numeric_only=True)
    n_ok = int(per.ssd_calibrated.astype(bool).sum())
    return (f" stated, measured +{med.ssd_added_us:.0f} µs (median QD1 4 KiB read {med.ssd_read_us:.0f} µs against "
            f"the disk's {med.ssd_disk_read_us:.0f} µs; wait {med.ssd_wait_us:.0f} µs; within the calibration's "
            f"tolerance in {n_ok} of {len(per)} processes)")


def disk_words(df: pd.DataFrame) -> str:
    """The disk named, from the e2e records' disk_* columns (or the provenance)."""
    prov = df.attrs.get("provenance", {}).get("disk", {})
    get = (lambda k: df[k].dropna().iloc[0] if k in df and df[k].notna().any() else prov.get(k))
    if get("disk_name") is None:
        return "disk not recorded"
    rot = get("disk_rotational")
    q1, q32 = get("disk_qd1_iops"), get("disk_qd32_iops")
    rates = f"; measured QD1 {q1:,.0f}, QD32 {q32:,.0f} 4 KiB O_DIRECT IOPS" if q1 and q32 else ""
    return (f"disk {get('disk_name')}: {get('disk_model')}, rotational flag {int(bool(rot)) if rot is not None else '?'}"
            f" (as the OS reports it), queue depth {get('disk_queue_depth')}{rates}")


def ok(df: pd.DataFrame) -> pd.DataFrame:
    """The measured rows that ran (status ok), warm-up and not-run rows left out."""
    return df[(df.phase == "measured") & (df.status == "ok")]


class E2E:
    """The end-to-end records: per-query totals of a (disk, back end, budget)."""

    def __init__(self, df: pd.DataFrame):
        self.all = with_ssd(df)
        self.ok = ok(self.all)
        self.prov = df.attrs.get("provenance", {})

    def rows(self, ssd, backend, budget) -> pd.DataFrame:
        o = self.ok
        return o[(o.ssd == ssd) & (o.backend == backend) & (o.budget == budget)]

    def totals(self, ssd, backend, budget) -> np.ndarray:
        return self.rows(ssd, backend, budget).total_s.to_numpy()

    def probes(self, ssd) -> pd.DataFrame:
        """The QD1/QD32 probe pairs (``phase = probe``) measured on device ``ssd`` (none in older records)."""
        a = self.all
        if "probe_qd1_iops" not in a:
            return a.iloc[:0]
        p = a[(a.phase == "probe") & (a.ssd == ssd) & (a.status == "ok")]
        return p.dropna(subset=["probe_qd1_iops", "probe_qd32_iops"])

    def half(self, ssd) -> str | None:
        """The budget nearest half the table (the table at 2x its memory) run with mmap on ``ssd``."""
        b = [x for x in self.ok[(self.ok.ssd == ssd) & (self.ok.backend == "mmap")].budget.unique() if x != "unlimited"]
        return min(b, key=lambda x: abs(float(x) - 0.5)) if b else None

    def smallest(self, ssd) -> str | None:
        """The smallest capped budget run with mmap on ``ssd``: where the paper states its speed-up over mmap
        (3.1-3.9x are Tables 4/5 at their smallest memory limits)."""
        b = [x for x in self.ok[(self.ok.ssd == ssd) & (self.ok.backend == "mmap")].budget.unique() if x != "unlimited"]
        return min(b, key=float) if b else None

    def source(self, ssd, budget) -> str:
        s = set(self.ok[(self.ok.ssd == ssd) & (self.ok.budget == budget)].source)
        return "emulated" if "emulated" in s else "measured"

    def why_not(self, ssd) -> str:
        d = self.all[(self.all.ssd == ssd) & (self.all.status != "ok")]
        return str(d.reason.iloc[0]) if len(d) and "reason" in d else f"no {ssd} rows recorded"


def hitrate(df: pd.DataFrame) -> pd.DataFrame:
    """Hit-rate rows with ``corpus`` (``full index`` in records from before the real-passages index)."""
    return df if "corpus" in df else df.assign(corpus="full index")


def reader_engine(io: pd.DataFrame, io_engine: str, qd: int) -> str:
    """The O_DIRECT engine our reader ran with at ``qd`` on the machine that measured: the ``reader_engine``
    the iops step recorded; in records without it, the engine the profile's ``io_engine`` names (auto is
    the thread pool). At QD 1 the reader is always the thread pool (a plain preadv loop)."""
    if qd <= 1:
        return "threadpool"
    recorded = io.attrs.get("provenance", {}).get("reader_engine")
    return recorded or ("aio" if io_engine == "aio" else "threadpool")


def _iops_samples(io: pd.DataFrame):
    """(tool, highest QD, its rows at that QD: 4 KiB IOPS per repeat, each with its process): our reader
    (thread pool) and fio, where they ran."""
    good = io[io.status == "ok"]
    for tool in ("espn-reader", "fio"):
        d = good[(good.tool == tool) & ((good.engine != "aio") if tool == "espn-reader" else True)]
        if len(d):
            qd = d.qd.max()
            yield tool, qd, d[d.qd == qd]


def budgets(b: pd.DataFrame) -> pd.Series:
    """The prefetch budget (equation 2: the ANN time of the lists still to scan) each fresh process of the
    batch step measured, indexed by its process (:func:`bench.core.judging.intervals.process_of`)."""
    m = b[b.phase == "measured"]
    return m.assign(p=intervals.process_of(m)).groupby("p").prefetch_budget_s.first()


def prefetch_budget_s(b: pd.DataFrame) -> float:
    """The prefetch budget the figures draw beside equation 4: the median over the batch step's processes."""
    return float(np.median(budgets(b)))


def budget_estimate(b: pd.DataFrame) -> Estimate:
    """The prefetch budget (seconds) and its interval over the batch step's fresh processes."""
    v = budgets(b)
    return intervals.bootstrap_ci(v.to_numpy(), n_boot=N_BOOT, groups=v.index.to_numpy())


def record_bytes(b: pd.DataFrame) -> float:
    """The table's mean record size (its 4/8 KiB I/Os), from the build's provenance."""
    return float(b.attrs["provenance"]["build"]["mean_io_size"])


def eq4_estimate(b: pd.DataFrame, rows: pd.DataFrame, n: int) -> Estimate:
    """Equation 4's threshold for ``n`` records a query: median bandwidth (4 KiB IOPS x 4 KiB of ``rows``)
    x median prefetch budget / (n x the mean record size), with an interval resampling the fresh processes
    of the IOPS step and of the batch step independently (each one's spread between runs is in it); its
    clusters are the fewer of the two."""
    bud = budgets(b)
    e = intervals.ratio_ci(rows.iops.to_numpy(float), 1.0 / bud.to_numpy(float), n_boot=N_BOOT,
                           groups=(intervals.process_of(rows), bud.index.to_numpy()))
    f = BLOCK / (n * record_bytes(b))
    return Estimate(e[0] * f, e[1] * f, e[2] * f, e.clusters, e.level)


def premise(b: pd.DataFrame, io: pd.DataFrame, k: int) -> tuple[Estimate, str]:
    """Equation 4's threshold at n = K (queries whose top-K reads fit in the prefetch budget), from fio
    where it ran, else our reader (thread pool), at the highest QD; and its source."""
    samples = {tool: (qd, d) for tool, qd, d in _iops_samples(io)}
    tool = "fio" if "fio" in samples else "espn-reader"
    if tool not in samples:
        return Estimate(np.nan, np.nan, np.nan, 0), "no IOPS measured"
    qd, d = samples[tool]
    return eq4_estimate(b, d, k), f"{tool} QD{qd}"


def eq4_table(b: pd.DataFrame, io: pd.DataFrame) -> pd.DataFrame:
    """Equation 4's batch threshold (with its interval over fresh processes) from each tool's bandwidth at
    its highest QD, next to the observed knee (the first batch where ESPN's critical access exceeds 1.5x
    memory's)."""
    m = b[b.phase == "measured"]
    budget = prefetch_budget_s(b)
    rec = record_bytes(b)
    rows = []
    for tool, qd, d in _iops_samples(io):
        bw = float(np.median(d.iops)) * BLOCK
        for mode, dd in m.groupby("rerank"):
            n = int(dd.rerank_n.iloc[0])
            g = dd.groupby(["method", "batch"]).access_s.median().unstack("method")
            knee = eq4.knee(g.index, g[ESPN_BATCH], g["memory"]) if "memory" in g and ESPN_BATCH in g else None
            est = eq4_estimate(b, d, n)
            rows.append({"rerank": mode, "n": n, "bandwidth_source": f"{tool} QD{qd}", "bw_MBps": bw / 1e6,
                         "prefetch_budget_ms": budget * 1e3, "data_per_query_KB": n * rec / 1e3,
                         "threshold_eq4": est[0], "threshold_lo": est[1], "threshold_hi": est[2],
                         "processes": est.clusters, "observed_knee_batch": knee,
                         "max_batch_run": int(dd.batch.max()), "min_batch_run": int(dd.batch.min()),
                         "paper_threshold": PV.BATCH_THRESHOLD_EXACT if mode == "exact" else PV.BATCH_THRESHOLD_PARTIAL})
    return pd.DataFrame(rows)


# Table 3 (section 3.1): the sizes records, ours (scopes of the build) and the paper's (collections).
SIZE_PARTS = {"cls": "CLS (single vector)", "bow": "BOW (multi-vector)", "ann_index": "ANN index",
              "padding": "block padding", "table_file": "table records on disk", "offsets": "offsets table"}


def size_series(df: pd.DataFrame) -> pd.Series:
    """One name per series: ``ours: <scope>`` for measured rows, the collection for the paper's."""
    return pd.Series(np.where(df.source == "paper", df.collection, "ours: " + df.scope), index=df.index)


def series_order(name: str) -> tuple:
    """Ours first (the collection's passages, then every record), then the paper's collections."""
    return (not name.startswith("ours"), name != "ours: collection passages", name)


def profile_of(df: pd.DataFrame) -> str:
    """`` (profile P)`` from a record set's provenance, empty when absent."""
    p = df.attrs.get("provenance", {}).get("profile")
    return f" (profile {p})" if p else ""


def sizes(df: pd.DataFrame) -> pd.DataFrame:
    """The sizes rows (ours and the paper's) with ``series``. Our ANN index and offsets table cover every
    record, so they are rows of the ``all records`` scope only."""
    df = df[df.source.isin(["measured", "paper"])]
    return df.assign(series=size_series(df))


def bow_cls(df: pd.DataFrame) -> pd.DataFrame:
    """Per series: BOW over CLS bytes (the same per passage as in total), BOW vectors and tokens per passage
    (the paper's BOW vectors: its BOW bytes over 32 x 2 B, computed)."""
    s = sizes(df)
    w = s.pivot_table(index=["series", "source"], columns="part", values="bytes", aggfunc="first")
    n = s.groupby(["series", "source"])[["n_passages", "n_tokens"]].first()
    out = pd.DataFrame({"ratio": w["bow"] / w["cls"], "bow_vectors_per_passage": w["bow"] / 64 / n.n_passages,
                        "tokens_per_passage": n.n_tokens / n.n_passages, "n_passages": n.n_passages})
    return out.reset_index()


def sizes_totals(df: pd.DataFrame) -> pd.DataFrame:
    """The totals per series (rows: passages, tokens, queries, then each part's bytes), ours and the paper's."""
    s = sizes(df)
    w = s.pivot_table(index="part", columns="series", values="bytes", aggfunc="first")
    w = w.reindex([p for p in SIZE_PARTS if p in w.index])
    counts = s.groupby("series")[["n_passages", "n_tokens", "n_queries"]].first().T
    out = pd.concat([counts, w]).reindex(columns=sorted(w.columns, key=series_order))
    out.attrs = dict(df.attrs)
    return out


# What the rows judge, computed once for the claims and the figures that draw them (same interval, same base).
def e2e_ratio(e: E2E, num: tuple, den: tuple, level: float = 0.95) -> tuple[Estimate, pd.DataFrame]:
    """Mean per-query end-to-end latency of ``num`` over ``den`` ((disk, back end, budget) each), the paper's
    statistic (section 5.1: the average latency of all queries), with a bootstrap interval over the fresh
    processes first, then the queries within them; and the rows it rests on."""
    ra, rb = e.rows(*num), e.rows(*den)
    est = intervals.ratio_ci(ra.total_s.to_numpy(), rb.total_s.to_numpy(), stat=np.mean, n_boot=N_BOOT, level=level,
                             groups=(intervals.process_of(ra), intervals.process_of(rb)))
    return est, pd.concat([ra, rb])


def mean_latency(rows: pd.DataFrame) -> Estimate:
    """Mean per-query latency of ``rows`` with its bootstrap interval over the fresh processes first."""
    return intervals.bootstrap_ci(rows.total_s.to_numpy(), stat=np.mean, n_boot=N_BOOT, groups=intervals.process_of(rows))


def hit_rows(h: pd.DataFrame, corpus: str, eta: int, k: int, step: float = 0.3) -> pd.DataFrame:
    """The per-query hit rates of ``corpus`` at nprobe ``eta``, the top ``k``, prefetch step ``step``."""
    return h[(h.corpus == corpus) & (h.nprobe == eta) & np.isclose(h.step, step) & (h.rerank_n == k)]


def hit_estimate(d: pd.DataFrame) -> Estimate:
    """Mean hit rate over queries with its bootstrap interval over the queries (deterministic given the index)."""
    return intervals.bootstrap_ci(d.hit_rate.to_numpy(), stat=np.mean, n_boot=N_BOOT)


def mrr_kept(q: pd.DataFrame, n: int, k: int) -> tuple[Estimate, np.ndarray, np.ndarray] | None:
    """Mean MRR@10 re-ranking the top ``n`` over re-ranking all ``k``, paired over queries (a bootstrap over the
    queries); with the per-query values at n and at k. None where the records lack either."""
    per = q[q.figure == "fig6-query"] if "figure" in q else q.iloc[:0]
    if per.empty or n not in set(per.rerank_n) or k not in set(per.rerank_n):
        return None
    a = per[per.rerank_n == n].set_index("query_id")["mrr@10"]
    b = per[per.rerank_n == k].set_index("query_id")["mrr@10"].reindex(a.index).to_numpy()
    a = a.to_numpy()

    def kept(i, axis=None):
        i = np.asarray(i, dtype=int)
        return a[i].mean(axis=axis) / np.maximum(b[i].mean(axis=axis), 1e-12)
    return intervals.bootstrap_ci(np.arange(len(a)), stat=kept, n_boot=N_BOOT), a, b


def access_gain(m: pd.DataFrame) -> dict[int, Estimate]:
    """Per batch size: plain direct reads' critical-path access over ESPN's (median over the repeats), with
    a bootstrap interval over the batch step's fresh processes first."""
    out = {}
    for B, g in m.groupby("batch"):
        a, e = g[g.method.str.startswith("direct")], g[g.method == ESPN_BATCH]
        out[int(B)] = intervals.ratio_ci(a.access_s, e.access_s, n_boot=N_BOOT,
                                         groups=(intervals.process_of(a), intervals.process_of(e)))
    return out
