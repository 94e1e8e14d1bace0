"""Trinity's stage-aware scheduler for the vector-search pool (paper section 3.3, Figure 4) and baselines.

Trinity keeps two queues:

- Q_pre (prefill retrievals), ordered by slack = deadline - (now + E~ * T_ext), earliest first, where
  deadline = arrival + L_pre,max, E~ is the expected number of extends of the request's top-M (measured)
  and T_ext the running mean of measured extend times; a short flush timeout tau_pre launches an idle
  engine for a prefill request without waiting for the global flush timeout;
- Q_dec (decode retrievals), FIFO with aging: a decode request that waited ``aging_s`` is served before
  the prefill reservation, down to r_min of the slots (so decode never starves).

At every extend the N free slots go: urgent prefill (slack below ``urgent_s``), aged decode (at most
(1 - r_min) N), prefill up to ceil(r N), Q_dec, then the rest of Q_pre (unused share passes on); empty slots
are the engine's masked dummies. Slack ordering lets prefill requests with time to spare yield to decode.
A control loop every ``control_s`` raises r and halves tau_pre when the prefill p95 wait exceeds its target,
and lowers r and doubles tau_pre when the decode stall fraction exceeds its target. The paper's third
signal, the KV-cache link utilisation, is not emulated here (no KV transfer is modelled).

Baselines: one FIFO queue, strict prefill priority, strict decode priority, and fixed r (Trinity without
the control loop).
"""
from __future__ import annotations

import collections
import dataclasses
import heapq
import math
from typing import Mapping

import numpy as np

from ...core.base.errors import ConfigError
from .workload import Request


@dataclasses.dataclass
class SchedParams:
    flush_s: float = 0.002        # global flush timeout (idle engine)
    tau_pre_s: float = 0.0005     # prefill flush timeout (initial for Trinity)
    r: float = 0.5                # initial (or fixed) prefill share
    r_min: float = 0.25
    r_max: float = 0.9
    r_step: float = 0.05
    aging_s: float = 0.02
    urgent_s: float = 0.005       # slack below which a prefill request goes first
    control_s: float = 0.2
    wait_target_s: float = 0.01   # prefill p95 wait target (a fraction of L_pre,max)
    stall_target: float = 0.2     # decode stall fraction target
    gen_s: float = 0.32           # decode time between retrievals (delta x per-token time)
    tau_min_s: float = 0.0001
    tau_max_s: float = 0.002

    def check(self) -> None:
        if not 0 <= self.r_min <= self.r_max <= 1:
            raise ConfigError(f"need 0 <= r_min ({self.r_min}) <= r_max ({self.r_max}) <= 1")
        if not self.r_min <= self.r <= self.r_max:
            raise ConfigError(f"r={self.r} must lie in [r_min, r_max] = [{self.r_min}, {self.r_max}]")
        for name in ("flush_s", "tau_pre_s", "aging_s", "tau_min_s", "tau_max_s", "urgent_s"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.control_s <= 0:
            raise ConfigError(f"control_s must be > 0, got {self.control_s}")


class _TwoQueues:
    name = "base"
    prefill_timeout = False

    def __init__(self, capacity: int, params: SchedParams, expected_extends: Mapping[int, float], t_ext_s: float):
        params.check()
        self.capacity, self.prm = capacity, params
        self.e_ext = dict(expected_extends)
        self.t_ext = t_ext_s
        self.pre: list = []                                 # heap of (slack key, rid, request)
        self.dec: collections.deque[Request] = collections.deque()
        self.r, self.tau_pre = params.r, params.tau_pre_s
        self.history: list[dict] = []
        self._last = None

    def push(self, req: Request, now: float) -> None:
        if req.kind == "prefill":
            key = req.deadline - self.e_ext.get(req.top_m, 0.0) * self.t_ext
            heapq.heappush(self.pre, (key, req.rid, req))
        else:
            self.dec.append(req)

    def waiting(self) -> int:
        return len(self.pre) + len(self.dec)

    def launch_at(self, now: float, n_active: int, n_free: int) -> float | None:
        if n_active:
            return now
        if not self.waiting():
            return None
        if self.waiting() >= n_free:
            return now
        oldest = min([r.arrival for _, _, r in self.pre] + ([self.dec[0].arrival] if self.dec else []))
        at = oldest + self.prm.flush_s
        if self.pre and self.prefill_timeout:
            at = min(at, min(r.arrival for _, _, r in self.pre) + self.tau_pre)
        return at

    def _pop_pre(self, n: int) -> list[Request]:
        return [heapq.heappop(self.pre)[2] for _ in range(min(n, len(self.pre)))]

    def _pop_dec(self, n: int) -> list[Request]:
        return [self.dec.popleft() for _ in range(min(n, len(self.dec)))]

    def on_extend(self, now: float, finished: list[Request], n_active: int) -> None:
        if self._last is not None:
            dt = now - self._last
            self.t_ext = 0.9 * self.t_ext + 0.1 * dt         # running mean of measured extend times
        self._last = None


class Fifo(_TwoQueues):
    """One queue in arrival order (both stages), the global flush timeout only."""

    name = "fifo"

    def push(self, req: Request, now: float) -> None:
        self.dec.append(req)

    def take(self, now: float, n_free: int, n_active: int) -> list[Request]:
        self._last = now
        return self._pop_dec(n_free)


class PrefillFirst(_TwoQueues):
    name = "prefill_first"
    prefill_timeout = True

    def push(self, req: Request, now: float) -> None:
        if req.kind == "prefill":
            heapq.heappush(self.pre, (req.arrival, req.rid, req))
        else:
            self.dec.append(req)

    def take(self, now: float, n_free: int, n_active: int) -> list[Request]:
        self._last = now
        out = self._pop_pre(n_free)
        return out + self._pop_dec(n_free - len(out))


class DecodeFirst(PrefillFirst):
    name = "decode_first"
    prefill_timeout = False

    def take(self, now: float, n_free: int, n_active: int) -> list[Request]:
        self._last = now
        out = self._pop_dec(n_free)
        return out + self._pop_pre(n_free - len(out))


class FixedR(_TwoQueues):
    """EDF-by-slack Q_pre with a reserved share r, FIFO-with-aging Q_dec, tau_pre: no control loop.

    Order of one extend's N free slots: urgent prefill (slack below ``urgent_s``: it must start now to make
    its deadline), aged decode (waited ``aging_s``; at most (1 - r_min) N), prefill up to ceil(r N), decode,
    then the rest of Q_pre."""

    name = "fixed_r"
    prefill_timeout = True

    def _urgent(self, now: float, n: int) -> list[Request]:
        out = []
        while self.pre and len(out) < n and self.pre[0][0] - now < self.prm.urgent_s:
            out.append(heapq.heappop(self.pre)[2])
        return out

    def take(self, now: float, n_free: int, n_active: int) -> list[Request]:
        self._last = now
        out = self._urgent(now, n_free)
        aged = 0
        while aged < len(self.dec) and now - self.dec[aged].arrival >= self.prm.aging_s:
            aged += 1
        out += self._pop_dec(min(aged, n_free - len(out) - math.ceil(self.prm.r_min * n_free)))
        out += self._pop_pre(max(0, min(math.ceil(self.r * n_free), n_free - len(out))))
        out += self._pop_dec(n_free - len(out))
        return out + self._pop_pre(n_free - len(out))


class Trinity(FixedR):
    """FixedR plus the control loop that adjusts r and tau_pre from measured feedback."""

    name = "trinity"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.win_pre: list[float] = []
        self.win_stall: list[float] = []
        self.next_control = self.prm.control_s

    def on_extend(self, now: float, finished: list[Request], n_active: int) -> None:
        super().on_extend(now, finished, n_active)
        for r in finished:
            if r.kind == "prefill":
                self.win_pre.append(r.latency)
            else:
                self.win_stall.append(r.latency / (r.latency + self.prm.gen_s))
        if now >= self.next_control:
            self._control(now)
            self.next_control = now + self.prm.control_s

    def _control(self, now: float) -> None:
        p = self.prm
        p95 = float(np.percentile(self.win_pre, 95)) if self.win_pre else 0.0
        stall = float(np.mean(self.win_stall)) if self.win_stall else 0.0
        if p95 > p.wait_target_s:
            self.r, self.tau_pre = min(p.r_max, self.r + p.r_step), max(p.tau_min_s, self.tau_pre / 2)
        elif stall > p.stall_target:
            self.r, self.tau_pre = max(p.r_min, self.r - p.r_step), min(p.tau_max_s, self.tau_pre * 2)
        self.history.append({"t_s": now, "r": self.r, "tau_pre_s": self.tau_pre, "pre_p95_wait_s": p95,
                             "dec_stall_fraction": stall})
        self.win_pre, self.win_stall = [], []


POLICIES = {c.name: c for c in (Fifo, PrefillFirst, DecodeFirst, FixedR, Trinity)}


def make(name: str, capacity: int, params: SchedParams, expected_extends: Mapping[int, float], t_ext_s: float):
    if name not in POLICIES:
        raise ConfigError(f"scheduler policy must be one of {sorted(POLICIES)}, got {name!r}")
    return POLICIES[name](capacity, params, expected_extends, t_ext_s)
