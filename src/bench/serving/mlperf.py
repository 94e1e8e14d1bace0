"""MLPerf LoadGen (the ``mlcommons-loadgen`` package) as the reference open-loop load generator of the
service studies (WindVE's open-loop runs), beside our own :mod:`.loadgen`.

LoadGen's Server scenario draws Poisson arrivals at a target rate (its own generator, seeded with
``schedule_rng_seed``), issues each query at its scheduled time to a system under test (SUT) and counts each
latency from that scheduled time to the SUT's completion, so a late issue or a queue in the service shows
in the latency (no coordinated omission). It checks a latency percentile against a target (the SLO here)
and applies its early-stopping rule; both are recorded as LoadGen states them.

:func:`run_server` is the SUT adapter: LoadGen's issue thread hands each query to the caller's asyncio
loop, which runs ``await call(i)``, the same request our generator sends (``i`` is the query's issue
order, so both generators send the same requests in the same order), and completes the sample when it
answers, fails or times out. The per-request times come from LoadGen's own trace (each sample's scheduled
time, issue delay and latency from the scheduled time) as :class:`.loadgen.Outcome` rows, so the callers
summarise both generators with one code path; LoadGen's own summary (its percentiles over every completed
query, refusals included; its validity and early-stopping verdicts) goes beside them as ``mlperf_*``.

What LoadGen cannot serve here, kept on :mod:`.loadgen`:

- bursty schedules (WindVE's bursty run, Trinity's ``bursty`` arrivals): the Server scenario has one fixed
  target rate, with no rate modulation and no way to be given the send times;
- Trinity's load and scheduler runs: they replay the engine on a discrete-event virtual clock, where an
  arrival is a number, and LoadGen issues in wall-clock time and does not hand out its schedule.
  :func:`run_server` takes any ``async`` call, so a Trinity engine served in real time could use it as is.

LoadGen keeps global state, so one test runs at a time in a process (a lock).
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable

from ..core.base.errors import BenchError, ConfigError
from .loadgen import Outcome

_ONE_TEST = threading.Lock()
SUMMARY_KEYS = {   # LoadGen's detail-log keys -> our record columns
    "result_validity": "mlperf_validity",
    "result_perf_constraints_met": "mlperf_constraint_met",
    "early_stopping_met": "mlperf_early_stopping_met",
    "result_scheduled_samples_per_sec": "mlperf_scheduled_rps",
    "result_completed_samples_per_sec": "mlperf_completed_rps",
    "loadgen_version": "mlperf_version",
}
PERCENTILES = ("50.00", "90.00", "95.00", "97.00", "99.00", "99.90")


@dataclasses.dataclass
class ServerRun:
    """One Server-scenario run: a row per request, and LoadGen's own summary (``mlperf_*`` columns)."""

    outcomes: list[Outcome]
    summary: dict


def settings(rate: float, n: int, seed: int, target_latency_s: float, percentile: float = 0.99):
    """LoadGen's Server scenario for exactly ``n`` queries at ``rate``/s (no minimum duration), seeded."""
    import mlperf_loadgen as lg

    if not rate > 0:
        raise ConfigError(f"offered rate must be > 0 requests/s, got {rate}")
    if n < 1:
        raise ConfigError(f"a run needs at least one request, got n={n}")
    if not target_latency_s > 0:
        raise ConfigError(f"target latency must be > 0 s, got {target_latency_s}")
    s = lg.TestSettings()
    s.scenario, s.mode = lg.TestScenario.Server, lg.TestMode.PerformanceOnly
    s.server_target_qps = float(rate)
    s.server_target_latency_ns = int(round(target_latency_s * 1e9))
    s.server_target_latency_percentile = float(percentile)
    s.min_query_count = s.max_query_count = int(n)
    s.min_duration_ms = 0
    s.server_coalesce_queries = False
    s.schedule_rng_seed = s.sample_index_rng_seed = s.qsl_rng_seed = int(seed) & (2 ** 63 - 1)
    return s


def _log_settings(outdir: str):
    import mlperf_loadgen as lg

    ls = lg.LogSettings()
    ls.log_output.outdir = outdir
    ls.log_output.copy_summary_to_stdout = False
    ls.log_output.copy_detail_to_stdout = False
    ls.enable_trace = True   # each sample's scheduled time, issue delay and latency
    return ls


def read_trace(path: Path) -> list[dict]:
    """The ``Sample`` begin events of LoadGen's trace (one per sample, in issue order): ``ts`` (scheduled
    time, us), ``query_seq``, ``sample_idx``, ``issue_start_ns`` and ``complete_ns`` (from the scheduled
    time). The file as a whole is not valid JSON (LoadGen quotes some keys twice), each event line is."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith('{"name":"Sample"') and '"ph":"b"' in line:
                ev = json.loads(line.rstrip().rstrip(","))
                out.append({"ts_us": ev["ts"], **ev["args"]})
    return sorted(out, key=lambda e: e["query_seq"])


def read_summary(path: Path) -> dict:
    """LoadGen's verdicts and percentiles (over every completed query) from its detail log."""
    got = {}
    with open(path) as f:
        for line in f:
            if line.startswith(":::MLLOG "):
                ev = json.loads(line[len(":::MLLOG "):])
                got[ev["key"]] = ev["value"]
    out = {col: got.get(key) for key, col in SUMMARY_KEYS.items()}
    for p in PERCENTILES:
        v = got.get(f"result_{p}_percentile_latency_ns")
        out[f"mlperf_p{float(p):g}_s"] = None if v is None else v / 1e9
    out["mlperf_mean_s"] = None if got.get("result_mean_latency_ns") is None else got["result_mean_latency_ns"] / 1e9
    return out


class _Adapter:
    """The SUT: LoadGen's issue thread -> ``await call(i)`` on ``loop`` -> QuerySamplesComplete."""

    def __init__(self, loop: asyncio.AbstractEventLoop, call, timeout_s: float, ok):
        self.loop, self.call, self.timeout_s, self.ok = loop, call, timeout_s, ok
        self.issued: list[int] = []          # LoadGen's sample index of each query, in issue order
        self.results: dict[int, tuple[bool, Any, str | None]] = {}

    def issue(self, samples) -> None:
        for q in samples:   # called on LoadGen's thread: hand over and return at once
            i = len(self.issued)
            self.issued.append(q.index)
            asyncio.run_coroutine_threadsafe(self._one(i, q.id), self.loop)

    async def _one(self, i: int, qid: int) -> None:
        import mlperf_loadgen as lg

        try:
            res = await asyncio.wait_for(self.call(i), self.timeout_s)
            self.results[i] = (bool(self.ok(res)), res, None)
        except asyncio.TimeoutError:
            self.results[i] = (False, None, "timeout")
        except Exception as exc:  # noqa: BLE001  (recorded, the run goes on)
            self.results[i] = (False, None, f"{type(exc).__name__}: {exc}")
        finally:
            lg.QuerySamplesComplete([lg.QuerySampleResponse(qid, 0, 0)])


def _start(adapter: _Adapter, s, n_samples: int, outdir: str) -> None:
    """Construct, run and destroy one LoadGen test (blocking; in a worker thread)."""
    import mlperf_loadgen as lg

    with _ONE_TEST:
        sut = lg.ConstructSUT(adapter.issue, lambda: None)
        qsl = lg.ConstructQSL(n_samples, n_samples, lambda idx: None, lambda idx: None)
        try:
            lg.StartTestWithLogSettings(sut, qsl, s, _log_settings(outdir))
        finally:
            lg.DestroyQSL(qsl)
            lg.DestroySUT(sut)


def outcomes(trace: list[dict], adapter: _Adapter) -> list[Outcome]:
    """One :class:`Outcome` per query, times in seconds from the first scheduled send: intended = LoadGen's
    scheduled time, sent = + its issue delay, done = + its latency (both from the scheduled time)."""
    if len(trace) != len(adapter.issued) or len(adapter.results) != len(adapter.issued):
        raise BenchError(f"LoadGen's trace has {len(trace)} samples, the adapter issued {len(adapter.issued)} "
                         f"and saw {len(adapter.results)} answers")
    t0 = trace[0]["ts_us"]
    out = []
    for i, ev in enumerate(trace):
        if ev["query_seq"] != i or ev["sample_idx"] != adapter.issued[i]:
            raise BenchError(f"LoadGen's trace and the adapter disagree on query {i}: {ev}")
        at = (ev["ts_us"] - t0) / 1e6
        ok, res, err = adapter.results[i]
        out.append(Outcome(i, at, at + ev["issue_start_ns"] / 1e9, at + ev["complete_ns"] / 1e9, ok,
                           status=res, error=err))
    return out


async def run_server(call: Callable[[int], Awaitable[Any]], rate: float, n: int, seed: int, timeout_s: float,
                     ok: Callable[[Any], bool] = lambda r: True, target_latency_s: float = 1.0,
                     percentile: float = 0.99) -> ServerRun:
    """``n`` requests (``await call(i)``) under LoadGen's Server scenario at ``rate``/s; every request gets an
    outcome (a timeout after ``timeout_s`` or an exception is recorded, never raised), so the run ends.
    ``target_latency_s`` at ``percentile`` is the latency constraint LoadGen judges."""
    s = settings(rate, n, seed, target_latency_s, percentile)
    adapter = _Adapter(asyncio.get_running_loop(), call, timeout_s, ok)
    with tempfile.TemporaryDirectory(prefix="mlperf-") as d:
        await asyncio.get_running_loop().run_in_executor(None, _start, adapter, s, n, d)
        trace, summary = read_trace(Path(d) / "mlperf_log_trace.json"), read_summary(Path(d) / "mlperf_log_detail.txt")
    return ServerRun(outcomes(trace, adapter), summary)
