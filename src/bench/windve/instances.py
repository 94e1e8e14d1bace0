"""Device instances (Section IV-A, Figure 3 B): each holds its own model copy and its own queue, and
computes what the queue holds as one batch, so C concurrent queries cost one batch of C (the setting of
equation 12). A short batching delay (infinity's 5 ms by default) lets a burst of concurrent requests
gather before the batch starts.

- :class:`TorchInstance`: the model on the CPU (explicit cores and thread count, the paper's reversed
  core order as an option) or on a CUDA GPU;
- :class:`EmulatedAccelerator`: no accelerator here, so this one answers with the embedding the real
  model gives for each text (computed once, before the run, by its own model copy) after the latency of
  the linear law t = alpha * C + beta. Labelled ``emulated``.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
import time

import numpy as np

from .emulation import LinearLaw
from .model import Encoder


@dataclasses.dataclass
class Job:
    texts: list[str]
    future: asyncio.Future
    enqueued: float


@dataclasses.dataclass
class Answer:
    """Embeddings of one request and where its time went (seconds)."""

    vectors: np.ndarray
    queue_s: float
    compute_s: float
    batch_size: int


class Instance:
    """A device instance: a queue, a batching worker task, and :meth:`_compute` for one batch."""

    kind = "accelerator"
    source = "measured"

    def __init__(self, name: str, batch_delay_s: float = 0.005, max_batch: int | None = None):
        self.name = name
        self.batch_delay_s = batch_delay_s
        self.max_batch = max_batch
        self.queue: asyncio.Queue[Job] | None = None
        self._task: asyncio.Task | None = None
        self.batches = 0

    def start(self) -> None:
        self.queue = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._worker(), name=f"windve-{self.name}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        while self.queue is not None and not self.queue.empty():
            job = self.queue.get_nowait()
            if not job.future.done():
                job.future.set_exception(RuntimeError(f"instance {self.name} stopped"))
        self._close()

    def _close(self) -> None:
        pass

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def submit(self, texts: list[str]) -> Answer:
        fut = asyncio.get_running_loop().create_future()
        self.queue.put_nowait(Job(list(texts), fut, time.perf_counter()))
        return await fut

    async def _worker(self) -> None:
        while True:
            first = await self.queue.get()
            if self.batch_delay_s > 0:
                await asyncio.sleep(self.batch_delay_s)
            jobs = [first]
            n = len(first.texts)
            while not self.queue.empty() and (self.max_batch is None or n < self.max_batch):
                jobs.append(self.queue.get_nowait())
                n += len(jobs[-1].texts)
            await self._run_batch(jobs)

    async def _run_batch(self, jobs: list[Job]) -> None:
        texts = [t for j in jobs for t in j.texts]
        t0 = time.perf_counter()
        try:
            vecs = await self._compute(texts)
        except Exception as exc:  # noqa: BLE001 - every waiting request gets the error, the worker lives on
            for j in jobs:
                if not j.future.done():
                    j.future.set_exception(exc)
            return
        t1 = time.perf_counter()
        self.batches += 1
        i = 0
        for j in jobs:
            k = len(j.texts)
            if not j.future.done():
                j.future.set_result(Answer(vecs[i:i + k], t0 - j.enqueued, t1 - t0, len(texts)))
            i += k

    async def _compute(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def _pin_thread(cores: tuple[int, ...] | None, threads: int) -> None:
    """Executor-thread initializer: affinity of this thread (inherited by its OpenMP team) and torch threads."""
    import torch

    if cores:
        os.sched_setaffinity(0, set(cores))
    torch.set_num_threads(threads)


class TorchInstance(Instance):
    """The model on a torch device; batches run on one dedicated executor thread."""

    def __init__(self, name: str, encoder: Encoder, threads: int = 1, cores: tuple[int, ...] | None = None,
                 **kw):
        super().__init__(name, **kw)
        self.kind = "cpu" if encoder.device == "cpu" else "accelerator"
        self.encoder = encoder
        self.threads = threads
        self.cores = cores
        self._pool = self._new_pool()

    def _new_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"windve-{self.name}",
                                                     initializer=_pin_thread, initargs=(self.cores, self.threads))

    def set_cores(self, cores: tuple[int, ...] | None, threads: int) -> None:
        """New affinity and thread count for the batches that start from now on."""
        old, self.cores, self.threads = self._pool, cores, threads
        self._pool = self._new_pool()
        old.shutdown(wait=False)

    async def _compute(self, texts: list[str]) -> np.ndarray:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.encoder.embed, texts)

    def _close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class EmulatedAccelerator(Instance):
    """An accelerator emulated by its latency law; answers with the real model's embeddings."""

    kind = "accelerator"
    source = "emulated"

    def __init__(self, name: str, encoder: Encoder, law: LinearLaw, **kw):
        super().__init__(name, **kw)
        self.encoder = encoder
        self.law = law
        self.cache: dict[str, np.ndarray] = {}
        self.overruns = 0   # batches whose uncached texts took longer than the law allowed
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"windve-{name}")

    def precompute(self, texts: list[str], batch: int = 32) -> None:
        """Embeddings of the run's texts, computed before the run by this instance's model copy."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for i in range(0, len(todo), batch):
            chunk = todo[i:i + batch]
            for t, v in zip(chunk, self.encoder.embed(chunk)):
                self.cache[t] = v

    async def _compute(self, texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        target = self.law.latency(len(texts))
        if any(t not in self.cache for t in texts):
            await asyncio.get_running_loop().run_in_executor(self._pool, self.precompute, texts)
        rest = target - (time.perf_counter() - t0)
        if rest > 0:
            await asyncio.sleep(rest)
        else:
            self.overruns += 1
        return np.stack([self.cache[t] for t in texts])

    def _close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
