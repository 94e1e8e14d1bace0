"""WindVE: the queue manager's decision time (Algorithm 1; the paper: < 0.1 ms), the estimator's fit,
and the embedding service's answer time for one query on the CPU path (in-process, 127.0.0.1)."""
from __future__ import annotations

import asyncio
import time

import numpy as np

from bench.windve.system import estimator
from bench.windve.system.queue_manager import QueueManager


class QueueManagerDispatch:
    def setup(self):
        self.m = QueueManager(["emulated", "cpu"], {"emulated": 64, "cpu": 8}, offload=True)

    def time_admit_release(self):
        d = self.m.admit()
        if d is not None:
            self.m.release(d)

    def track_decision_us(self):
        m = QueueManager(["emulated", "cpu"], {"emulated": 10**6, "cpu": 8}, offload=True)
        t0 = time.perf_counter()
        for _ in range(10000):
            m.admit()
        return (time.perf_counter() - t0) / 10000 * 1e6

    track_decision_us.unit = "us"


class EstimatorFit:
    def setup(self):
        self.c = np.array([1, 8, 16, 32, 64])
        self.t = 0.01 * self.c + 0.3

    def time_fit_and_predict(self):
        estimator.predict_depth(estimator.fit(self.c, self.t), 2.0)


class ServiceEmbedOne:
    """One /embed answer on the CPU path of an in-process service (HTTP over 127.0.0.1)."""

    timeout = 120

    def setup(self):
        from aiohttp import web

        from bench.windve.system.app import make_app
        from bench.windve.system.service import EmbeddingService
        from bench.windve.system.service_config import ServiceConfig, free_port

        self.loop = asyncio.new_event_loop()
        self.svc = EmbeddingService(ServiceConfig(acc_depth=8, cpu_depth=8))
        self.runner = web.AppRunner(make_app(self.svc), access_log=None)
        self.port = free_port()
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        import aiohttp

        self.sess = self.loop.run_until_complete(self._session(aiohttp))

    async def _session(self, aiohttp):
        return aiohttp.ClientSession()

    def teardown(self):
        self.loop.run_until_complete(self.sess.close())
        self.loop.run_until_complete(self.runner.cleanup())
        self.loop.close()

    def time_embed_one(self):
        async def go():
            async with self.sess.post(f"http://127.0.0.1:{self.port}/embed", json={"inputs": "what is rag"}) as r:
                await r.read()
        self.loop.run_until_complete(go())
