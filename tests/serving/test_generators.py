"""Our open-loop generator against MLPerf LoadGen's Server scenario (issue 33, part 3), on a local HTTP
service on 127.0.0.1 with a known service time: one FIFO server (an asyncio lock) that takes ``SERVICE_S``
per request, so requests queue as in an M/D/1 queue.

- Agreement: both generators run at the same time against the same service, each at ``RATE``/s
  (Poisson, ``N`` requests), so a busy machine's noise hits both alike; their p50 and p99 (latency from the
  intended send time, answered requests) agree within ``P50_TOL`` / ``P99_TOL`` (absolute + share of the
  larger). Measured here (2 cores, idle): ours p50 15-17 ms, p99 46-70 ms; LoadGen p50 13-16 ms, p99
  42-63 ms; with two busy loops on both cores the two still agreed within these tolerances (p50 16-60 ms,
  p99 125-334 ms).
- No hidden queueing: the service stalls ``STALL_S`` once; every request that reaches it during the first
  ``STALL_S - 0.1`` s of the stall waits >= 0.1 s, and both generators count it (latency from the intended
  send time). A closed-loop generator timing from its actual send (the negative control) sees one slow
  request only.
"""
from __future__ import annotations

import asyncio
import contextlib
import time

import numpy as np
import pytest

from bench.core.base.errors import ConfigError
from bench.serving import loadgen, mlperf

pytestmark = [pytest.mark.network, pytest.mark.slow]

SERVICE_S = 0.010          # the service's time per request (one server)
RATE, N = 25.0, 150        # each generator's offered rate and requests (two at once: utilisation 0.5)
P50_TOL = (0.005, 0.35)    # |ours - LoadGen| <= 5 ms + 35% of the larger
P99_TOL = (0.010, 0.50)    # |ours - LoadGen| <= 10 ms + 50% of the larger
STALL_S, STALL_AT, STALL_RATE, STALL_N, STALL_SERVICE_S = 0.3, 40, 100.0, 150, 0.004


@contextlib.contextmanager
def fifo_service(service_s: float, stall_at: int | None = None, stall_s: float = 0.0):
    """A one-server HTTP service on a free 127.0.0.1 port (its own event loop in a thread): ``GET /?i=N``
    holds the server ``service_s`` (``+ stall_s`` for request ``stall_at``); always stopped on exit."""
    from aiohttp import web

    from ..aioserve import serve_app

    state = {}

    async def handle(request):
        i = int(request.query.get("i", -1))
        async with state["lock"]:
            await asyncio.sleep(service_s + (stall_s if i == stall_at else 0.0))
        return web.json_response({"i": i})

    async def make_lock():
        state["lock"] = asyncio.Lock()

    app = web.Application()
    app.router.add_get("/", handle)
    with serve_app(app, on_loop=make_lock) as url:
        yield url


def _caller(sess, url):
    async def call(i):
        async with sess.get(f"{url}/?i={i}") as r:
            await r.read()
            return r.status
    return call


def _ok(status) -> bool:
    return status == 200


async def _both(url: str, rate: float, n: int, seed: int):
    """Ours and LoadGen at the same time against ``url``, each at ``rate``."""
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as sess:
        call = _caller(sess, url)
        ours, lg = await asyncio.gather(
            loadgen.run_open_loop(loadgen.poisson_schedule(rate, n, seed), call, timeout_s=30, ok=_ok),
            mlperf.run_server(call, rate, n, seed, timeout_s=30, ok=_ok, target_latency_s=1.0))
    return ours, lg


async def _closed_loop_late_timestamps(url: str, schedule) -> list[float]:
    """The negative control: one request at a time, each sent at max(its intended time, the previous
    answer) and timed from its actual send (what coordinated omission looks like)."""
    import aiohttp

    async with aiohttp.ClientSession() as sess:
        call, t0, lat = _caller(sess, url), time.perf_counter(), []
        for i, at in enumerate(schedule):
            await asyncio.sleep(max(0.0, t0 + at - time.perf_counter()))
            sent = time.perf_counter()
            await call(i)
            lat.append(time.perf_counter() - sent)
    return lat


def _pcts(outs) -> tuple[float, float]:
    s = loadgen.latency_summary([o.latency_s for o in outs if o.ok], duration_s=1.0)
    return s["p50_s"], s["p99_s"]


def _agree(a: float, b: float, tol: tuple[float, float]) -> bool:
    return abs(a - b) <= tol[0] + tol[1] * max(a, b)


def test_ours_and_loadgen_agree_on_the_same_service():
    with fifo_service(SERVICE_S) as url:
        ours, run = asyncio.run(_both(url, RATE, N, seed=3))
    lg = run.outcomes
    assert len(ours) == len(lg) == N and all(o.ok for o in ours) and all(o.ok for o in lg)
    (o50, o99), (l50, l99) = _pcts(ours), _pcts(lg)
    msg = f"ours p50 {o50 * 1e3:.1f} ms p99 {o99 * 1e3:.1f} ms; LoadGen p50 {l50 * 1e3:.1f} ms p99 {l99 * 1e3:.1f} ms"
    print(msg)
    assert min(o50, l50) >= SERVICE_S * 0.9, msg           # nobody reports faster than the server
    assert _agree(o50, l50, P50_TOL) and _agree(o99, l99, P99_TOL), msg
    # LoadGen's own summary (every completed query) says the same as its trace, from which ours is computed:
    # its median is one of the trace's middle latencies (LoadGen takes a rank, our summary interpolates, and two
    # neighbouring latencies of 150 can differ by more than 1%, so no relative tolerance on the values)
    mid = np.sort([o.latency_s for o in lg])[len(lg) // 2 - 3: len(lg) // 2 + 3]
    assert mid[0] - 1e-4 <= run.summary["mlperf_p50_s"] <= mid[-1] + 1e-4, (run.summary["mlperf_p50_s"], mid)
    assert run.summary["mlperf_scheduled_rps"] > 0 and run.summary["mlperf_version"]


def test_neither_generator_hides_a_stall():
    """A stall of STALL_S on one request: every request arriving in its first STALL_S - 0.1 s waits >= 0.1 s
    (at STALL_RATE/s about 20 of them); both generators count them, the late-timestamp closed loop does not."""
    import aiohttp

    async def ours_run(url):
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as sess:
            sched = loadgen.poisson_schedule(STALL_RATE, STALL_N, 5)
            return await loadgen.run_open_loop(sched, _caller(sess, url), timeout_s=30, ok=_ok)

    async def lg_run(url):
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as sess:
            return (await mlperf.run_server(_caller(sess, url), STALL_RATE, STALL_N, 5, timeout_s=30, ok=_ok)).outcomes

    slow = {}
    for name, run in (("ours", ours_run), ("loadgen", lg_run)):
        with fifo_service(STALL_SERVICE_S, stall_at=STALL_AT, stall_s=STALL_S) as url:
            outs = asyncio.run(run(url))
        lat = np.array([o.latency_s for o in outs])
        assert all(o.ok for o in outs) and lat.max() >= STALL_S, name
        slow[name] = int((lat >= 0.1).sum())
    with fifo_service(STALL_SERVICE_S, stall_at=STALL_AT, stall_s=STALL_S) as url:
        control = np.array(asyncio.run(_closed_loop_late_timestamps(url, loadgen.poisson_schedule(STALL_RATE, STALL_N, 5))))
    slow["closed_loop_late_timestamps"] = int((control >= 0.1).sum())
    print(slow)
    assert slow["ours"] >= 5 and slow["loadgen"] >= 5, slow
    assert control.max() >= STALL_S and slow["closed_loop_late_timestamps"] < min(slow["ours"], slow["loadgen"]), slow


def test_loadgen_adapter_records_every_request():
    """Without HTTP: errors and timeouts are outcomes (LoadGen still gets every completion, so the run
    ends), the offered rate is LoadGen's, and latency counts from the scheduled time (a one-at-a-time
    server offered 4x its rate queues, and the queue shows)."""
    lock = asyncio.Lock()

    async def call(i):
        if i == 3:
            raise RuntimeError("boom")
        if i == 4:
            await asyncio.sleep(5)
        async with lock:
            await asyncio.sleep(0.01)
        return i

    run = asyncio.run(mlperf.run_server(call, 400.0, 40, seed=1, timeout_s=0.5, target_latency_s=0.05))
    outs = run.outcomes
    assert [o.index for o in outs] == list(range(40))
    assert "boom" in outs[3].error and outs[4].error == "timeout" and sum(o.ok for o in outs) == 38
    assert all(o.intended_s <= o.sent_s <= o.done_s for o in outs)
    assert np.all(np.diff([o.intended_s for o in outs]) >= 0) and outs[-1].intended_s < 1.0   # ~0.1 s at 400/s
    ok = [o.latency_s for o in outs if o.ok]
    assert max(ok) > 0.2 > min(ok)    # 38 x 10 ms served one at a time: the last ones waited
    assert run.summary["mlperf_constraint_met"] is False   # LoadGen's p99 verdict against 50 ms


def test_loadgen_settings_refuse_bad_values():
    with pytest.raises(ConfigError, match="rate must be > 0"):
        mlperf.settings(0, 10, 1, 1.0)
    with pytest.raises(ConfigError, match="at least one request"):
        mlperf.settings(10, 0, 1, 1.0)
    with pytest.raises(ConfigError, match="target latency"):
        mlperf.settings(10, 10, 1, 0)
