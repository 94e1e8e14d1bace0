"""The queue manager of Algorithm 1 (Section IV-B1): bounded per-device queues; a query goes to the
accelerator while its queue is not full, to the CPU when heterogeneous computing is on and the CPU
queue is not full, and is otherwise refused ('BUSY', answered by the service as HTTP 429).

A queue's length counts the queries a device holds, waiting or being computed (``npu_queue_length
+= 1`` in Algorithm 1); it drops when the answer leaves. The manager times itself per decision
(the paper reports under 0.1 ms).
"""
from __future__ import annotations

import time

from bench.core.errors import ConfigError


class QueueManager:
    """Admission by Algorithm 1 over ``order`` (accelerator first) with depths ``depths``."""

    def __init__(self, order: list[str], depths: dict[str, int], offload: bool):
        check_depths(order, depths)
        self.order = list(order)
        self.depths = dict(depths)
        self.offload = bool(offload) and len(order) > 1
        self.length = {d: 0 for d in order}
        self.last_decision_ns = 0

    def admit(self, n: int = 1) -> str | None:
        """The device that takes ``n`` queries (all on one device), or None for BUSY."""
        t0 = time.perf_counter_ns()
        chosen = None
        candidates = self.order if self.offload else self.order[:1]
        for dev in candidates:
            if self.length[dev] + n <= self.depths[dev]:
                self.length[dev] += n
                chosen = dev
                break
        self.last_decision_ns = time.perf_counter_ns() - t0
        return chosen

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
