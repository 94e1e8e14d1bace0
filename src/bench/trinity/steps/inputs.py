"""What Trinity's steps read before they measure (shared step inputs, no step of its own): the dataset with
its graph checked against the vectors, the request classes of the workload, the parameter checks (bad input
fails before any work), the engine built from the profile, and the ``trace`` step's records as the replay
model of the serving steps (Trinity sections 3.2 and 3.3)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...ann import graph as graph_mod
from ...core.machine import devices
from ...core.measuring import records
from ...core.base.errors import ConfigError
from ...core.declaring.params import as_dict
from ...data import prepared
from ..params import Params
from ..system import event_loop
from ..system.engine import ExtendEngine, validate_queries
from ..system.workload import RequestClass, parse_classes


@dataclasses.dataclass(frozen=True)
class Vectors:
    """A prepared dataset (``ds``: ids, checksum, ground truth), its base vectors and queries as float32
    arrays, and the fixed-degree graph built on them with the graph's sidecar."""

    ds: object
    base: np.ndarray
    queries: np.ndarray
    graph: np.ndarray
    side: dict

    @property
    def gt(self) -> np.ndarray:
        return self.ds.gt_ids


def load(manifest: str, graph_path: str) -> Vectors:
    """The dataset and its graph; the graph checked against the vectors."""
    ds = prepared.load_vectors(manifest)
    base = np.ascontiguousarray(ds.base)
    g, side = graph_mod.load_graph(graph_path, base)
    return Vectors(ds, base, np.ascontiguousarray(ds.queries, dtype=np.float32), g, side)


def device(p: Params) -> str:
    """engine.device, with ``auto`` resolved (CUDA where torch sees one)."""
    want = p.engine.device
    if want == "auto":
        return "cuda" if devices.cuda_available() else "cpu"
    if want == "cuda" and not devices.cuda_available():
        raise ConfigError("trinity.engine.device: cuda requested but torch sees no CUDA device")
    return want


@dataclasses.dataclass(frozen=True)
class Classes:
    """The workload's request classes: the mix of the ``load`` step, prefill and decode of ``sched``."""

    mix: list[RequestClass]
    prefill: list[RequestClass]
    decode: list[RequestClass]

    def all(self) -> list[RequestClass]:
        return [*self.mix, *self.prefill, *self.decode]


def classes(p: Params) -> Classes:
    """The profile's request classes, checked (:func:`..system.workload.parse_classes`)."""
    w = p.workload
    return Classes(*(parse_classes(as_dict(getattr(w, key)), f"trinity.workload.{key}")
                     for key in ("classes", "prefill_classes", "decode_classes")))


def check(p: Params, v: Vectors) -> None:
    """Every size the study will search with, checked against the data before any work."""
    if p.engine.p <= 0:
        raise ConfigError(f"trinity.engine.p={p.engine.p}: parents per extend must be > 0")
    n = v.base.shape[0]
    if v.graph.shape[1] >= n:
        raise ConfigError(f"graph degree D={v.graph.shape[1]} must be < N={n}")
    cls = classes(p).all()
    k10, tms = p.recall.k, list(p.recall.top_m)
    validate_queries(v.queries, v.base.shape[1], [c.k for c in cls] + [min(k10, m) for m in tms],
                     [c.top_m for c in cls] + tms, n)        # every query: dimension and NaN
    if any(m < k10 for m in tms):
        raise ConfigError(f"trinity.recall.top_m: {[m for m in tms if m < k10]} smaller than k={k10}")
    if k10 > v.gt.shape[1]:
        raise ConfigError(f"recall@{k10} needs {k10} ground-truth neighbours, the dataset has {v.gt.shape[1]}")
    bad = [x for x in p.load.loads if not x > 0]
    if bad:
        raise ConfigError(f"trinity.load.loads: offered load must be > 0, got {bad}")
    bad = [x for x in p.scheduler.prefill_loads if not x > 0]
    if bad:
        raise ConfigError(f"trinity.scheduler.prefill_loads: offered load must be > 0, got {bad}")
    p.scheduler.judged()


def loaded(p: Params, manifest: str, graph_path: str) -> Vectors:
    """:func:`load` then :func:`check`: what every step that searches starts with."""
    v = load(manifest, graph_path)
    check(p, v)
    return v


def engine(p: Params, v: Vectors, capacity: int, top_m_max: int, seed: int, trace: bool = False) -> ExtendEngine:
    """The extend engine of the profile with ``capacity`` slots (the distance op no wider than needed)."""
    e = p.engine
    chunk = min(int(e.chunk), capacity * e.p * v.graph.shape[1]) if e.chunk else None
    return ExtendEngine(v.base, v.graph, capacity=capacity, p=e.p, top_m_max=top_m_max, max_iters=e.max_iters,
                        device=device(p), seed=seed, trace=trace, chunk=chunk)


# the method text of the serving steps that replay the trace (load, sched)
REPLAY = ("replayed: each request's extends and distance tasks and result ids come from the trace step's "
          "real searches; each extend's duration is drawn from the live engine's measured extend times with "
          "the same number of distance-op launches; queueing, batching and the clock are simulated; latency "
          "= completion - intended arrival (open-loop schedule from bench.serving.loadgen). ")


@dataclasses.dataclass
class Traced:
    """The ``trace`` step's records as a replay model: each (query, top-M)'s real search, the measured extend
    times, and what the serving steps size their loads with."""

    traces: dict
    times: event_loop.TimeModel
    capacity: int
    lanes: int
    ext_by_m: dict
    recall_by: dict
    t_full: float
    n_queries: int
    dataset: str
    slot_lanes: int | None = None    # p x D lanes per busy slot (records without it: launches from the tasks)
    fixed: bool = False              # the traced engine ran every launch of its fixed shape (a CUDA graph)
    uid: str = ""                    # the fresh trace process it came from (its process_uid, else its number)

    def extends(self, classes: list[RequestClass]) -> float:
        w = np.array([c.weight for c in classes])
        return float(np.dot(w / w.sum(), [self.ext_by_m[c.top_m] for c in classes]))

    def capacity_rps(self, classes: list[RequestClass]) -> float:
        """Requests/s the engine sustains with every slot busy: capacity / (E x mean T_ext at full occupancy)."""
        return self.capacity / (self.extends(classes) * self.t_full)

    def replay(self, seed: int) -> event_loop.ReplayAdapter:
        """A fresh replay of the traced searches, extend times drawn with ``seed``."""
        return event_loop.ReplayAdapter(self.traces, self.capacity, self.lanes, self.times.with_seed(seed),
                                        self.slot_lanes, self.fixed)

    def launches(self, busy: int, fill: int, lanes: int) -> int:
        """Launches of a ``lanes``-lane op in an extend with ``busy`` slots and ``fill`` tasks, counted as the
        traced engine counted its own (:func:`.event_loop.launches_for`)."""
        return event_loop.launches_for(busy, fill, lanes, self.slot_lanes, self.capacity, self.fixed)


def traced_of(df: pd.DataFrame, seed: int) -> Traced:
    """The replay model of one fresh trace process's records (the trace step's own rows, before it writes
    them, for its live check)."""
    m = df[df.phase == "measured"]
    req, ext = m[m.row == "request"], m[m.row == "extend"]
    traces = {(int(r.qidx), int(r.top_m)): event_loop.Trace(np.asarray(r.steps, dtype=int), np.asarray(r.ids))
              for r in req.itertuples()}
    rcol = [c for c in req if c.startswith("recall_at_")][0]
    cap = int(df.capacity.iloc[0])
    cal = _calibration(ext)
    full = ext[(ext.active == cap) & ~cal]
    return Traced(traces, _time_model(ext, cal, full, seed), cap, int(df.chunk.iloc[0]),
                  req.groupby("top_m").extends.mean().to_dict(),
                  {(int(r.qidx), int(r.top_m)): float(getattr(r, rcol)) for r in req.itertuples()},
                  float((full if len(full) else ext).dur_s.mean()), int(req.qidx.max()) + 1, str(df.dataset.iloc[0]),
                  int(df.slot_lanes.iloc[0]) if "slot_lanes" in df else None,
                  bool(df.fixed_shape.iloc[0]) if "fixed_shape" in df else False, _uid(df))


def _uid(df: pd.DataFrame) -> str:
    """The fresh process a trace's rows came from: ``process_uid`` (written by the step skeleton), else the
    process number, else "0"."""
    for col in ("process_uid", "process"):
        if col in df and df[col].notna().any():
            return str(df[col].dropna().iloc[0])
    return "0"


def _samples(ext: pd.DataFrame) -> list[tuple[int, int, float]]:
    return list(zip(ext.tasks.astype(int), ext.launches.astype(int), ext.dur_s.astype(float)))


def _time_model(ext: pd.DataFrame, cal: np.ndarray, full_ext: pd.DataFrame, seed: int) -> event_loop.TimeModel:
    """The measured extend times (``cal``: the calibration rows; ``full_ext``: the main pass's extends with
    every slot busy), shaped by the interleaved calibration rounds where the trace has them (rows with
    ``round``): the full count is the most frequent launch count of ``full_ext``; older traces (no rounds)
    draw from the nearest measured count, calibration rows included."""
    if "round" not in ext or not ext["round"].notna().any() or full_ext.empty:
        return event_loop.TimeModel(_samples(ext), seed)
    rnd = ext[ext["round"].notna()]
    full = int(full_ext.launches.mode().iloc[0])
    shape = event_loop.calibrated_shape(rnd.launches, rnd.dur_s, full)
    return event_loop.TimeModel(_samples(ext[~cal]), seed, shape or None, full)


def _calibration(ext: pd.DataFrame) -> np.ndarray:
    return ext["calibration"].fillna(False).astype(bool).to_numpy() if "calibration" in ext else \
        np.zeros(len(ext), dtype=bool)


def _by_process(df: pd.DataFrame) -> list[pd.DataFrame]:
    """The trace's records split by the fresh process that measured them (one part where it ran in one)."""
    if "process" not in df:
        return [df]
    return [part for _, part in sorted(df.groupby("process"), key=lambda kv: kv[0])]


def load_traces(path: str, seed: int) -> Traced:
    """The replay model of the trace's first fresh process (the ``placement`` step)."""
    return traced_of(_by_process(records.read(path))[0], seed)


def load_trace_processes(path: str, seed: int) -> list[Traced]:
    """One replay model per fresh process the trace ran in (the ``load`` and ``sched`` steps replay seed r
    on :func:`trace_for` r, so their repeats hold the noise between runs of the live engine)."""
    return [traced_of(part, seed) for part in _by_process(records.read(path))]


def trace_for(rep: int, traces: list) -> int:
    """The trace process seed ``rep`` replays: the processes in turn (r mod their number)."""
    return rep % len(traces)
