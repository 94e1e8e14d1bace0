"""The load side of WindVE's measurements (Section V-A3): the service as a child process (started,
awaited on /health, always stopped with its whole process group), one query over HTTP, the paper's
closed loop (C queries sent at once, the next batch only when all have answered; the SLO is met when
every query of the batch finished within it) with its per-round statistics, and one open-loop run
(beyond the paper: requests sent at their intended times, latency from them), by MLPerf LoadGen's Server
scenario (:mod:`bench.serving.mlperf`, Poisson runs) or by our generator (:mod:`bench.serving.loadgen`,
any schedule: the bursty runs, which LoadGen cannot express); each run records which generator ran."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import aiohttp
import numpy as np

from bench.core.base.errors import BenchError, ConfigError

REQUEST_TIMEOUT_SLOS = 20   # an open-loop request unanswered after this many SLOs counts as lost


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies, even by SIGKILL (Linux prctl
    PR_SET_PDEATHSIG), so a killed measurement never leaves its service behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux/glibc
        pass


class ServiceProcess:
    """``bench windve serve`` as a child in its own session; ``with`` waits for /health and always stops it."""

    def __init__(self, args: list[str], port: int, host: str = "127.0.0.1", start_timeout_s: float = 120.0,
                 env: dict | None = None):
        self.url = f"http://{host}:{port}"
        self.cmd = [sys.executable, "-m", "bench", "windve", "serve", "--host", host, "--port", str(port), *args]
        self.start_timeout_s = start_timeout_s
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.started_s = float("nan")
        self.accelerator: str | None = None   # set by the steps once the service said which it runs
        self.prepared = None                  # what the step prepared while the service started

    def __enter__(self) -> "ServiceProcess":
        self.start()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def start(self) -> "ServiceProcess":
        """Launch the child and return at once (work of the caller may overlap the model load)."""
        self._log = tempfile.TemporaryFile()
        self._t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, **(self.env or {})}, preexec_fn=_die_with_parent)
        return self

    def wait_healthy(self) -> None:
        """Block until /health answers 200, i.e. every instance is warm (503 while warming; BenchError with
        the log's tail if the child dies, e.g. a failed warm-up, or times out)."""
        self._wait_healthy()
        self.started_s = time.perf_counter() - self._t0

    def __exit__(self, *exc) -> None:
        self.stop()

    def log_tail(self, n: int = 2000) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-n:]

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"windve service exited with {self.proc.returncode} before /health:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise BenchError(f"windve service not healthy after {self.start_timeout_s:g} s:\n{self.log_tail()}")

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM to the service's process group, SIGKILL after ``grace_s``; idempotent."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def admin(self, **config) -> dict:
        """POST /admin/config (synchronously; between measurements)."""
        req = urllib.request.Request(self.url + "/admin/config", data=json.dumps(config).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            raise BenchError(f"windve /admin/config refused {config}: {exc.read().decode()}") from None


    def decisions(self) -> dict[str, list[float]]:
        """GET /admin/decisions: every request's Algorithm 1 decision time so far (microseconds): wall
        (``dispatch_us``) and the thread's CPU time (``dispatch_cpu_us``)."""
        with urllib.request.urlopen(self.url + "/admin/decisions", timeout=30) as r:
            return json.loads(r.read())


def session(timeout_s: float = 60.0) -> aiohttp.ClientSession:
    """A client session with no connection cap (every concurrent query has its own connection)."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False),
                                 timeout=aiohttp.ClientTimeout(total=timeout_s))


async def post_embed(sess: aiohttp.ClientSession, url: str, text: str) -> dict:
    """One query to ``/embed``: status, device, latency (from this call's start), the vector, the service's
    own times (``service_s``: arrival to response built, ``queue_s``, ``compute_s``) and the admission's word:
    the latency predicted when it was admitted (``predicted_s``; requests admitted after it may join its batch
    and lengthen it), that of the batch it ran in as its last member's admission predicted it
    (``predicted_batch_s``), or the rule that refused it (429)."""
    t0 = time.perf_counter()
    try:
        async with sess.post(url + "/embed", json={"inputs": text, "normalize": True}) as r:
            body = await r.read()
            t1 = time.perf_counter()
            vec = json.loads(body)[0] if r.status == 200 else None
            return {"status": r.status, "device": r.headers.get("x-device", ""), "latency_s": t1 - t0,
                    "dispatch_us": float(r.headers.get("x-dispatch-us", "nan")), "vector": vec,
                    "service_s": _ms(r.headers.get("x-total-time")), "queue_s": _ms(r.headers.get("x-queue-time")),
                    "compute_s": _ms(r.headers.get("x-compute-time")),
                    "retry_after": r.headers.get("Retry-After"),
                    "predicted_s": float(r.headers.get("x-predicted-time", "nan")) / 1e3,
                    "predicted_batch_s": _ms(r.headers.get("x-predicted-batch-time")),
                    "refused_by": r.headers.get("x-refused-by", "")}
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        return {"status": -1, "device": "", "latency_s": time.perf_counter() - t0, "dispatch_us": float("nan"),
                "vector": None, "retry_after": None, "predicted_s": float("nan"), "predicted_batch_s": float("nan"),
                "refused_by": "",
                "error": type(exc).__name__}


def _ms(header: str | None) -> float:
    """A service header in milliseconds as seconds (NaN when absent)."""
    try:
        return float(header) / 1e3
    except (TypeError, ValueError):
        return float("nan")


async def closed_round(sess: aiohttp.ClientSession, url: str, texts: list[str]) -> list[dict]:
    """One closed-loop batch: all ``texts`` sent at once; returns when every one has answered."""
    return list(await asyncio.gather(*(post_embed(sess, url, t) for t in texts)))


def round_texts(pool: list[str], c: int, offset: int) -> list[str]:
    """``c`` texts for one round, cycling through the pool."""
    return [pool[(offset + i) % len(pool)] for i in range(c)]


async def closed_level(sess, url: str, pool: list[str], c: int, rounds: int, warmup: int) -> list[dict]:
    """``warmup`` + ``rounds`` closed-loop rounds of ``c`` concurrent queries; one row per round."""
    if c < 1:
        raise ConfigError(f"concurrency must be >= 1, got {c}")
    rows = []
    for r in range(warmup + rounds):
        res = await closed_round(sess, url, round_texts(pool, c, r * c))
        rows.append(round_row(res, c, r, "warmup" if r < warmup else "measured"))
    return rows


def round_row(res: list[dict], c: int, r: int, phase: str) -> dict:
    """Per-round statistics: max and median latency, answers by status and by device."""
    lat = np.array([x["latency_s"] for x in res])
    ok = [x for x in res if x["status"] == 200]
    row = {"concurrency": c, "round": r, "phase": phase, "n": len(res), "n_ok": len(ok),
           "n_busy": sum(x["status"] == 429 for x in res), "n_error": sum(x["status"] not in (200, 429) for x in res),
           "latency_max_s": float(lat.max()), "latency_p50_s": float(np.median(lat)),
           "dispatch_us_max": float(np.nanmax([x["dispatch_us"] for x in res] or [np.nan]))}
    for dev in ("emulated", "cpu", "cuda"):
        mine = [x["latency_s"] for x in ok if x["device"] == dev]
        row[f"n_{dev}"] = len(mine)
        row[f"latency_max_{dev}_s"] = float(max(mine)) if mine else np.nan
    return row


def level_stat(rows: list[dict], key: str = "latency_max_s") -> float:
    """The latency that decides a level: the median over measured rounds of each round's max."""
    vals = [r[key] for r in rows if r["phase"] == "measured" and not np.isnan(r[key])]
    return float(np.median(vals)) if vals else float("inf")


def all_answered(rows: list[dict]) -> bool:
    return all(r["n_ok"] == r["n"] for r in rows)


def request_rows(outs) -> list[dict]:
    """One row per request of an open-loop run, from what the generator already recorded
    (:func:`loadgen.run_open_loop`, or LoadGen's trace through :func:`mlperf.run_server`; nothing re-timed): its intended send time, when it was sent and answered (seconds from the run's
    start), latency from the intended send time, HTTP status (-1: no answer), the device that answered
    and whether it counted as answered."""
    rows = []
    for o in outs:
        st = o.status if isinstance(o.status, dict) else {}
        rows.append({"request": o.index, "intended_s": o.intended_s, "sent_s": o.sent_s, "done_s": o.done_s,
                     "latency_s": o.latency_s, "status": int(st.get("status", -1)), "device": st.get("device", ""),
                     "answered": bool(o.ok), "error": o.error or st.get("error", "") or ""})
    return rows


GENERATORS = ("loadgen", "ours")   # MLPerf LoadGen's Server scenario, or bench.serving.loadgen


async def _send(call, schedule, timeout_s: float, generator: str, rate: float | None, seed: int | None,
                slo: float):
    """The run's outcomes and the generator's own columns: LoadGen draws its own Poisson arrivals at
    ``rate`` for ``len(schedule)`` requests (seeded ``seed``); ours sends ``schedule`` as given."""
    from bench.serving import loadgen, mlperf

    ok = lambda r: r["status"] == 200   # noqa: E731
    if generator == "loadgen":
        if rate is None or seed is None:
            raise ConfigError("the LoadGen generator needs the offered rate and a seed (Poisson runs only)")
        run = await mlperf.run_server(call, rate, len(schedule), seed, timeout_s, ok=ok, target_latency_s=slo)
        return run.outcomes, {"generator": "loadgen", **run.summary}
    if generator != "ours":
        raise ConfigError(f"open-loop generator must be one of {GENERATORS}, got {generator!r}")
    return await loadgen.run_open_loop(schedule, call, timeout_s=timeout_s, ok=ok), {"generator": "ours"}


async def open_run(svc: ServiceProcess, sess, pool: list[str], schedule, slo: float, generator: str = "ours",
                   rate: float | None = None, seed: int | None = None) -> tuple[dict, list[dict]]:
    """One open-loop run of ``schedule`` against the service, by ``generator`` (``loadgen``: LoadGen's Server
    scenario at ``rate`` with as many requests, its own Poisson draw; ``ours``: the schedule as given):
    goodput and latency percentiles (from the intended send times), the shares served by the accelerator,
    offloaded to the CPU, refused and lost, the CPU the service process and the load generator used, which
    generator ran (with LoadGen's own verdicts, ``mlperf_*``); and the run's requests (:func:`request_rows`)."""
    import psutil

    from bench.serving import loadgen

    proc = psutil.Process(svc.proc.pid)
    t0, meter = proc.cpu_times(), loadgen.CpuMeter().start()
    outs, gen_cols = await _send(lambda i: post_embed(sess, svc.url, pool[i % len(pool)]), schedule,
                                 REQUEST_TIMEOUT_SLOS * slo, generator, rate, seed, slo)
    gen, t1 = meter.stop(), proc.cpu_times()
    duration = max(o.done_s for o in outs)
    ok = [o for o in outs if o.ok]
    devs = [o.status["device"] if isinstance(o.status, dict) else "" for o in outs]
    summ = loadgen.latency_summary([o.latency_s for o in ok], duration, slo_s=slo)
    n = len(outs)
    row = {"n": n, "duration_s": duration, **summ,
           "share_accelerator": devs.count("emulated") / n + devs.count("cuda") / n,
           "share_cpu": devs.count("cpu") / n,
           "share_refused": sum(isinstance(o.status, dict) and o.status["status"] == 429 for o in outs) / n,
           "share_lost": sum(o.error is not None for o in outs) / n,
           "late_sends_s": max(o.sent_s - o.intended_s for o in outs),
           "service_cpu_s": (t1.user + t1.system) - (t0.user + t0.system),
           "service_cores": ((t1.user + t1.system) - (t0.user + t0.system)) / gen["loadgen_wall_s"],
           "machine_cores": psutil.cpu_count(), **{k: v for k, v in gen.items() if k != "loadgen_pid"},
           **gen_cols}
    return row, request_rows(outs)
