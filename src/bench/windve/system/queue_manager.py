"""The queue manager of Algorithm 1 (Section IV-B1): bounded per-device queues; a query goes to the
accelerator while its queue is not full, to the CPU when heterogeneous computing is on and the CPU
queue is not full, and is otherwise refused ('BUSY', answered by the service as HTTP 429).

A queue's length counts the queries a device holds, waiting or being computed (``npu_queue_length
+= 1`` in Algorithm 1); it drops when the answer leaves. The depth C_max stays the paper's hard cap.

With an SLO given (``slo_s``), a device must also predict that the new query completes within it, the
running batch and the queries already waiting included (:mod:`.admission`): a device whose queue has room
by depth but whose predicted completion misses the SLO is skipped like a full one (the CPU is then tried,
as Algorithm 1 offloads). Each refusal says why: ``depth`` (every usable queue at C_max) or ``deadline``
(room by depth, but no device predicted to answer in time). Without an SLO the prediction is still made (and
reported) so the device's residuals keep learning, but only the depth decides. The manager times itself
per decision, the prediction included (the paper reports under 0.1 ms): wall time and the thread's CPU
time (the manager's own work, without the time the thread was descheduled).
"""
from __future__ import annotations

import time
from typing import Callable

from bench.core.base.errors import ConfigError

from .admission import Prediction

# (device, queries, arrival, texts or None) -> the prediction for that device, or None when it has no law yet
Predictor = Callable[[str, int, float, "list[str] | None"], "Prediction | None"]


class QueueManager:
    """Admission by Algorithm 1 over ``order`` (accelerator first) with depths ``depths``; with ``slo_s``
    and ``predict``, a device also needs a predicted completion within the SLO."""

    def __init__(self, order: list[str], depths: dict[str, int], offload: bool, slo_s: float | None = None,
                 predict: Predictor | None = None):
        check_depths(order, depths)
        if slo_s is not None and not slo_s > 0:
            raise ConfigError(f"slo_s must be > 0 (or null: depth only), got {slo_s!r}")
        self.order = list(order)
        self.depths = dict(depths)
        self.offload = bool(offload) and len(order) > 1
        self.slo_s = slo_s
        self.predict = predict
        self.length = {d: 0 for d in order}
        self.last_decision_ns = 0       # wall time of the last decision (preemption by other threads included)
        self.last_decision_cpu_ns = 0   # this thread's CPU time in it (the manager's own work)
        self.last_reason: str | None = None            # why the last refusal: "depth" or "deadline"
        self.last_prediction: Prediction | None = None  # the chosen device's prediction (None: depth only)

    def admit(self, n: int = 1, arrival: float | None = None, texts: list[str] | None = None) -> str | None:
        """The device that takes ``n`` queries (all on one device), or None for BUSY (see ``last_reason``);
        ``texts`` lets a device count what they cost it beyond its law."""
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        chosen, reason, self.last_prediction = self._pick(n, t0 / 1e9 if arrival is None else arrival, texts)
        if chosen is not None:
            self.length[chosen] += n
        self.last_reason = reason
        self.last_decision_ns = time.perf_counter_ns() - t0
        self.last_decision_cpu_ns = time.thread_time_ns() - c0   # the manager's own CPU time, without preemption
        return chosen

    def refusal(self, n: int = 1, arrival: float | None = None) -> str | None:
        """Why ``n`` queries would be refused now (``depth``/``deadline``), or None; decides nothing (the
        service asks before reading a body, so a burst's refusals cost no parsing)."""
        return self._pick(n, time.perf_counter() if arrival is None else arrival, None)[1]

    def _pick(self, n: int, arrival: float, texts) -> tuple[str | None, str | None, Prediction | None]:
        reason = "depth"
        for dev in (self.order if self.offload else self.order[:1]):
            if self.length[dev] + n > self.depths[dev]:
                continue
            p = self.predict(dev, n, arrival, texts) if self.predict is not None else None
            if self.slo_s is not None and p is not None and not p.ok:
                reason = "deadline"
                continue
            return dev, None, p
        return None, reason, None

    def full(self) -> bool:
        """True when no queue Algorithm 1 may use has room for even one query (BUSY before parsing)."""
        candidates = self.order if self.offload else self.order[:1]
        return all(self.length[d] >= self.depths[d] for d in candidates)

    def release(self, dev: str, n: int = 1) -> None:
        self.length[dev] = max(0, self.length[dev] - n)


def check_depths(order: list[str], depths: dict[str, int]) -> None:
    """Each device of ``order`` needs a queue depth >= 1."""
    for dev in order:
        d = depths.get(dev)
        if d is None:
            raise ConfigError(f"no queue depth given for device {dev!r}")
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise ConfigError(f"queue depth of {dev!r} must be an integer >= 1, got {d!r}")
