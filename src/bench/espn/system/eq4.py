"""Equation 4 of the ESPN paper (section 4.3): the query batch size up to which ESPN keeps pace with DRAM,
threshold = SSD bandwidth x prefetch budget / data per query; and the knee of Figures 8/9 it is set
beside (the first batch where ESPN's critical-path access exceeds 1.5x memory's). The tables built from
records are :func:`bench.espn.analysis.eq4_table`."""
from __future__ import annotations

ESPN_BATCH = "ESPN (direct + serial-wait prefetch)"   # the batch simulation's ESPN series (Figures 8-10):
# its prefetcher is the paper's serial one (the critical path waits for the whole prefetch), not the e2e
# pipeline's cut-concurrent one (PREFETCHERS below)
# The two prefetchers of this study, named for what they do (records, figures and claim rows):
PREFETCHER = "cut-concurrent"   # this pipeline's (the e2e step): cut at the final top n, misses read concurrently
PREFETCHER_SERIAL = "serial-wait"   # the batch step's simulation: the critical path waits for the whole prefetch
PREFETCHERS = {PREFETCHER: "cut at the final top n; misses read concurrently with the prefetch's rest (e2e)",
               PREFETCHER_SERIAL: "the critical path waits for the whole prefetch, then reads the misses "
                                  "(the paper's serial version; batch step)"}
KNEE_FACTOR = 1.5   # the knee: the first batch where ESPN's critical access exceeds 1.5x memory's


def threshold(bandwidth_Bps: float, prefetch_budget_s: float, n_records: int, record_bytes: float) -> float:
    """Equation 4: the batch size whose reads of ``n_records`` records each fill the prefetch budget."""
    return bandwidth_Bps * prefetch_budget_s / (n_records * record_bytes)


def knee(batches, espn_s, memory_s) -> int | None:
    """The first batch where ESPN's access exceeds ``KNEE_FACTOR`` x memory's (and by more than 0.1 ms)."""
    over = [b for b, e, m in zip(batches, espn_s, memory_s) if e > KNEE_FACTOR * m and e - m > 1e-4]
    return int(min(over)) if over else None
