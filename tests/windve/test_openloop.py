"""WindVE's open-loop runs by either generator (issue 33, part 3), against ``bench windve serve`` as a child
process on 127.0.0.1 (always stopped): a Poisson run under MLPerf LoadGen's Server scenario and a bursty run
by our generator; each run's row says which generator ran (LoadGen's own verdicts beside it), and every
request has its row with the intended send time."""
from __future__ import annotations

import asyncio

import pytest

from bench.core.base.errors import ConfigError
from bench.serving import loadgen
from bench.windve import load
from bench.windve.system.service_config import free_port

pytestmark = [pytest.mark.network, pytest.mark.slow]

POOL = ["what is the capital of france", "vector embeddings for retrieval", "open loop load"]


async def _runs(svc):
    async with load.session() as sess:
        sched = loadgen.poisson_schedule(20.0, 30, 7)
        lg = await load.open_run(svc, sess, POOL, sched, 1.0, generator="loadgen", rate=20.0, seed=7)
        bursty = loadgen.bursty_schedule(20.0, 30, 8, burst_factor=2.0, burst_s=0.25, period_s=1.0)
        ours = await load.open_run(svc, sess, POOL, bursty, 1.0, generator="ours")
        with pytest.raises(ConfigError, match="rate and a seed"):
            await load.open_run(svc, sess, POOL, sched, 1.0, generator="loadgen")
        with pytest.raises(ConfigError, match="generator must be one of"):
            await load.open_run(svc, sess, POOL, sched, 1.0, generator="wrk")
    return lg, ours


def test_poisson_by_loadgen_and_bursty_by_ours_against_the_service():
    args = ["--emulate", "v100-xeon", "--emulated-alpha", "0.002", "--emulated-beta", "0.01"]
    with load.ServiceProcess(args, free_port()) as svc:
        (lg_row, lg_reqs), (our_row, our_reqs) = asyncio.run(_runs(svc))
    assert lg_row["generator"] == "loadgen" and our_row["generator"] == "ours"
    assert lg_row["mlperf_version"] and lg_row["mlperf_validity"] in ("VALID", "INVALID")
    assert lg_row["mlperf_p50_s"] > 0 and "mlperf_p50_s" not in our_row
    for row, reqs in ((lg_row, lg_reqs), (our_row, our_reqs)):
        assert row["n"] == len(reqs) == 30 and row["share_lost"] == 0
        assert all(r["status"] == 200 and r["latency_s"] >= r["done_s"] - r["intended_s"] - 1e-9 for r in reqs)
        assert row["p50_s"] <= row["p99_s"] < 1.0
