"""The approximate hierarchical priority queue of ChamVS (paper section 4.2, Figures 7 and 8).

- ``systolic_replace``: the register-array systolic priority queue's behaviour (replace the largest
  element when the incoming one is smaller), used as the reference L1/L2 queue.
- Analytic model (section 4.2.2): a queue holds k of the K results with the binomial probability
  ``p(k) = C(K, k) q^k (1 - q)^(K - k)``, ``q = 1 / num_queues``; ``P(k)`` is its cumulative sum. The L1
  length is the smallest L with ``P(L) ** num_queues >= 0.99`` (no queue overflows in 99% of the
  queries, queues taken as independent). Counting one queue per PQ decoding unit,
  ``units = 4 channels x 64 B / m``, this reproduces the authors' lengths 10 / 15 / 23 / 38 for
  m = 8 / 16 / 32 / 64.
- Simulation: the distances of a query's scanned vectors are dealt to the decoding units in arrival
  order (vector i to unit i mod units, then alternately to the unit's two L1 queues), every L1 queue
  keeps its ``l1_length`` smallest, the L2 queue keeps the K smallest of the L1 contents; a query counts
  as identical when its top-K equals exact selection.
"""
from __future__ import annotations

import math

import numpy as np

from ...core.base.errors import ConfigError


def binomial_pmf(k_total: int, num_queues: int) -> np.ndarray:
    """p(k), k = 0..K: probability that one of ``num_queues`` queues holds k of the K results."""
    if num_queues < 1 or k_total < 1:
        raise ConfigError("num_queues and K must be >= 1")
    q = 1.0 / num_queues
    return np.array([math.comb(k_total, k) * q ** k * (1 - q) ** (k_total - k) for k in range(k_total + 1)])


def binomial_cdf(k_total: int, num_queues: int) -> np.ndarray:
    return np.minimum(np.cumsum(binomial_pmf(k_total, num_queues)), 1.0)


def analytic_l1_length(num_queues: int, k_total: int = 100, target: float = 0.99) -> int:
    """Smallest L1 length L with P(L) ** num_queues >= target."""
    cdf = binomial_cdf(k_total, num_queues)
    ok = np.nonzero(cdf ** num_queues >= target)[0]
    return int(ok[0]) if ok.size else k_total


def units_for_m(m: int, channels: int = 4, axi_bytes: int = 64) -> int:
    if m < 1 or (channels * axi_bytes) % m:
        raise ConfigError(f"m={m} must divide {channels * axi_bytes}")
    return channels * axi_bytes // m


def systolic_replace(queue: list[float], x: float, length: int) -> None:
    """The systolic queue's only operation: insert ``x`` if the queue is not full or x beats its max."""
    if len(queue) < length:
        queue.append(x)
        queue.sort()
    elif x < queue[-1]:
        queue[-1] = x
        queue.sort()


def hierarchical_topk(dist: np.ndarray, units: int, l1_length: int, k: int) -> np.ndarray:
    """Indices of the K selected by the approximate hierarchical queue, for each row of ``dist``.

    ``dist`` (nq, n): the distances in the order the decoding units produce them. Vectorised: an L1
    queue of length L keeps the L smallest of what it is dealt, which is what the systolic queue does.
    """
    dist = np.atleast_2d(np.asarray(dist, dtype=np.float64))
    nq, n = dist.shape
    nqueues = 2 * units
    pos = np.arange(n)
    unit = pos % units
    which = (pos // units) % 2
    queue_of = unit * 2 + which
    keep = np.zeros((nq, n), dtype=bool)
    for qi in range(nqueues):
        cols = np.nonzero(queue_of == qi)[0]
        if cols.size == 0:
            continue
        if cols.size <= l1_length:
            keep[:, cols] = True
            continue
        part = np.argpartition(dist[:, cols], l1_length - 1, axis=1)[:, :l1_length]
        keep[np.arange(nq)[:, None], cols[part]] = True
    masked = np.where(keep, dist, np.inf)
    kk = min(k, n)
    sel = np.argpartition(masked, kk - 1, axis=1)[:, :kk]
    return sel


def identical_fraction(dist: np.ndarray, units: int, l1_length: int, k: int) -> float:
    """Fraction of queries whose approximate top-K set equals exact top-K selection."""
    dist = np.atleast_2d(np.asarray(dist, dtype=np.float64))
    kk = min(k, dist.shape[1])
    exact = np.argpartition(dist, kk - 1, axis=1)[:, :kk]
    approx = hierarchical_topk(dist, units, l1_length, k)
    # compare the selected distances (ties at the K-th distance make either index equally right)
    same = [np.array_equal(np.sort(row[a]), np.sort(row[b])) for row, a, b in zip(dist, exact, approx)]
    return float(np.mean(same))


def simulated_l1_length(dist: np.ndarray, units: int, k: int, target: float = 0.99) -> int:
    """Smallest L1 length whose simulated identical fraction reaches ``target`` (binary search)."""
    lo, hi = 1, k
    while lo < hi:
        mid = (lo + hi) // 2
        if identical_fraction(dist, units, mid, k) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def random_distances(nq: int, n: int, seed: int) -> np.ndarray:
    """i.i.d. distances in random arrival order: the setting the binomial model assumes."""
    return np.random.default_rng(seed).random((nq, n))
