"""Device instances (Section IV-A, Figure 3 B): each holds its own model copy and its own queue, and
computes what the queue holds as one batch, so C concurrent queries cost one batch of C (the setting of
equation 12). A short batching delay (infinity's 5 ms by default) lets a burst of concurrent requests
gather before the batch starts.

Each instance also says what it holds (:meth:`Instance.backlog`: the running batch and the requests
waiting for the next) and keeps its own law t = alpha * C + beta fitted to its batches
(:class:`.admission.LawTracker`), so the queue manager can predict when a new request would complete.

- :class:`TorchInstance`: the model on the CPU (explicit cores and thread count, the paper's reversed
  core order as an option) or on a CUDA GPU (measured);
- :class:`EmulatedAccelerator`: for machines without an accelerator (or on explicit request), this one
  answers with the embedding the real model gives for each text (computed once, before the run, by its
  own model copy) after the latency of the linear law t = alpha * C + beta. Labelled ``emulated``. A text
  it has not seen is computed on this CPU first; admission counts that time (:meth:`Instance.extra_s`),
  and a batch it makes late counts as an overrun.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import os
import time
from typing import Callable

import numpy as np

from .admission import Backlog, LawTracker, Residuals
from .emulation import LinearLaw
from .encoder import Encoder


@dataclasses.dataclass
class Job:
    texts: list[str]
    future: asyncio.Future
    enqueued: float
    arrival: float      # when the request reached the service (its SLO counts from here)
    predicted_finish: float | None = None   # the admission's predicted completion of the batch it joined
    extra_s: float = 0.0                    # work beyond the device's law (the emulated device's cache misses)


@dataclasses.dataclass
class Answer:
    """Embeddings of one request and where its time went (seconds)."""

    vectors: np.ndarray
    queue_s: float
    compute_s: float
    batch_size: int
    predicted_finish: float | None = None   # the batch's predicted completion (its last member's prediction)


class Instance:
    """A device instance: a queue, a batching worker task, and :meth:`_compute` for one batch."""

    kind = "accelerator"
    source = "measured"

    def __init__(self, name: str, batch_delay_s: float = 0.005, max_batch: int | None = None):
        self.name = name
        self.batch_delay_s = batch_delay_s
        self.max_batch = max_batch
        self.pending: collections.deque[Job] = collections.deque()   # requests not yet in a batch, oldest first
        self.running_n = 0                  # queries of the batch being computed
        self.running_start = 0.0
        self.running_extra_s = 0.0
        self.tracker = LawTracker()         # this device's law, from its own batches
        self.residuals = Residuals()        # served - predicted latency of its recent requests
        self.warmed: set[int] = set()       # batch sizes run by the warm-up (see :mod:`.warmup`)
        self.on_batch: Callable[[str, int, float], None] | None = None   # (device, queries, seconds) per batch
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self.batches = 0

    def start(self) -> None:
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._worker(), name=f"windve-{self.name}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        while self.pending:
            job = self.pending.popleft()
            if not job.future.done():
                job.future.set_exception(RuntimeError(f"instance {self.name} stopped"))
        self._close()

    def _close(self) -> None:
        pass

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def admission_law(self) -> LinearLaw | None:
        """The law the queue manager predicts with: fitted to this instance's batches (None before two sizes ran)."""
        return self.tracker.law

    def backlog(self) -> Backlog:
        return Backlog(self.running_n, self.running_start,
                       tuple((len(j.texts), j.arrival, j.extra_s) for j in self.pending), self.running_extra_s)

    def extra_s(self, texts: list[str]) -> float:
        """Seconds ``texts`` add beyond the device's law (none for a real device)."""
        return 0.0

    async def submit(self, texts: list[str], arrival: float | None = None,
                     predicted_finish: float | None = None) -> Answer:
        fut = asyncio.get_running_loop().create_future()
        now = time.perf_counter()
        self.pending.append(Job(list(texts), fut, now, now if arrival is None else arrival, predicted_finish,
                                self.extra_s(texts)))
        self._wake.set()
        return await fut

    async def _worker(self) -> None:
        while True:
            while not self.pending:
                self._wake.clear()
                await self._wake.wait()
            if self.batch_delay_s > 0:
                await asyncio.sleep(self.batch_delay_s)
            jobs: list[Job] = []
            n = 0
            while self.pending and (not jobs or self.max_batch is None or n < self.max_batch):
                jobs.append(self.pending.popleft())
                n += len(jobs[-1].texts)
            await self._run_batch(jobs)

    async def _run_batch(self, jobs: list[Job]) -> None:
        texts = [t for j in jobs for t in j.texts]
        t0 = time.perf_counter()
        self.running_n, self.running_start = len(texts), t0
        self.running_extra_s = sum(j.extra_s for j in jobs)
        try:
            vecs = await self._compute(texts)
        except Exception as exc:  # noqa: BLE001 - every waiting request gets the error, the worker lives on
            for j in jobs:
                if not j.future.done():
                    j.future.set_exception(exc)
            return
        finally:
            self.running_n = 0
        t1 = time.perf_counter()
        self.batches += 1
        self.tracker.add(len(texts), t1 - t0)
        if self.on_batch is not None:
            self.on_batch(self.name, len(texts), t1 - t0)
        preds = [j.predicted_finish for j in jobs if j.predicted_finish is not None]
        pred = max(preds) if preds else None   # later members' predictions include the earlier ones
        i = 0
        for j in jobs:
            k = len(j.texts)
            if not j.future.done():
                j.future.set_result(Answer(vecs[i:i + k], t0 - j.enqueued, t1 - t0, len(texts), pred))
            i += k

    async def _compute(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def _pin_thread(cores: tuple[int, ...] | None, threads: int | None) -> None:
    """Executor-thread initializer: affinity of this thread (inherited by its OpenMP team) and torch threads
    (``None``: left alone; the GPU instance must not shrink the CPU instance's thread count)."""
    import torch

    if cores:
        os.sched_setaffinity(0, set(cores))
    if threads:
        torch.set_num_threads(threads)


class TorchInstance(Instance):
    """The model on a torch device; batches run on one dedicated executor thread."""

    def __init__(self, name: str, encoder: Encoder, threads: int | None = 1, cores: tuple[int, ...] | None = None,
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
        """New affinity and thread count for the batches that start from now on; the law fitted so far and
        the warm-up no longer hold (the service warms this instance again)."""
        old, self.cores, self.threads = self._pool, cores, threads
        self._pool = self._new_pool()
        old.shutdown(wait=False)
        self.tracker.reset()
        self.residuals.reset()
        self.warmed.clear()

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
        self.miss_s = 0.0   # seconds per text not yet cached (measured when it computes them; the warm-up's first)
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"windve-{name}")

    def admission_law(self) -> LinearLaw:
        """The emulated device's own law (its latency is that law by construction)."""
        return self.law

    def precompute(self, texts: list[str], batch: int = 32) -> None:
        """Embeddings of the run's texts, computed before the run by this instance's model copy."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for i in range(0, len(todo), batch):
            chunk = todo[i:i + batch]
            t0 = time.perf_counter()
            for t, v in zip(chunk, self.encoder.embed(chunk)):
                self.cache[t] = v
            self.miss_s = (time.perf_counter() - t0) / len(chunk)

    def extra_s(self, texts: list[str]) -> float:
        """This machine's CPU time for the texts not cached yet: the batch takes at least that (the law of an
        accelerator that would compute them cannot hold while this CPU does)."""
        return self.miss_s * sum(t not in self.cache for t in texts)

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
