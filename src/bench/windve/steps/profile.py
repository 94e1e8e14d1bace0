"""Step ``profile``: per-device closed-loop latency against concurrency (Figure 4), the regression's
and the stress test's queue depths with their profiling-run counts (Table III), and the regression's
depths against query length (Figure 5) and against the CPU instance's cores (Figure 6).

The step starts ``service_processes`` fresh service processes one after another (each loads the model and
warms up anew), and each profiles every device and climbs its own stress tests, so the fits, depths and
coefficient ratios have one value per fresh process (rows carry ``process``) and an interval between runs.
Figures 5 and 6 are drawn only (no ledger row rests on them): the first process profiles them.

The CPU instance is measured. The accelerator is the CUDA GPU where there is one (measured, standing for
the paper's V100 + Xeon pair, ``source=measured``); else, or when the profile asks for it
(``accelerator: emulated``), the emulated one, whose law (equation 12) is set from the CPU fit measured
here and each pair's paper ratios: its rows are ``source=emulated``. Every row names its ``device`` and
``device_name`` (the GPU's, the CPU's model, or the emulated pair).
"""
from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd

from bench.core.measuring.step import Context, Result
from bench.core.declaring.study import step

from .. import load
from ..params import Levels, Params
from ..system import emulation, estimator
from ..system.textgen import load_fast_tokenizer
from .inputs import (Clock, Pools, accelerator_words, decision_rows, first_index, overhead, run_pairs, service, share,
                     source_of)

BIG = 100_000   # queue depth while profiling one device: the closed loop, not the queue, bounds C


class Profiler:
    """Closed-loop measurements of one device configuration; the rows they produce collect in
    :attr:`rows` (the step's records)."""

    def __init__(self, svc, sess, params: Params, searches: range = range(1)):
        self.svc, self.sess, self.p = svc, sess, params
        self.searches = searches   # the stress searches this service process runs (numbered across processes)
        self.rows: list[dict] = []

    async def level(self, pool, c: int, tags: dict, warm: bool) -> float:
        got = await load.closed_level(self.sess, self.svc.url, pool, c, self.p.rounds, 1 if warm else 0)
        self.rows += [{"kind": "round", **tags, **r} for r in got]
        return load.level_stat(got)

    async def fit(self, pool, levels, tags: dict) -> estimator.LinearFit:
        cs, ts = [], []
        for i, c in enumerate(levels):
            cs.append(c)
            ts.append(await self.level(pool, c, {**tags, "purpose": "profile"}, warm=(i == 0)))
        f = estimator.fit(cs, ts)
        self.rows.append({"kind": "fit", **tags, "alpha": f.alpha, "beta": f.beta, "r2": f.r2, "runs": len(levels)})
        return f

    def round_fits(self, tags: dict) -> list[estimator.LinearFit]:
        """The same regression fitted to each measured round alone (round r of every level): the spread of
        the predicted depth between the profile's rounds (Table III's regression interval)."""
        mine = [r for r in self.rows if r["kind"] == "round" and r.get("purpose") == "profile"
                and r["phase"] == "measured" and all(r.get(k) == v for k, v in tags.items())]
        by_level: dict[int, list[float]] = {}   # each level's measured rounds in order (the first level warms)
        for r in mine:
            by_level.setdefault(r["concurrency"], []).append(r["latency_max_s"])
        fits = []
        for k in range(max((len(v) for v in by_level.values()), default=0)):
            pts = [(c, v[k]) for c, v in by_level.items() if len(v) > k and np.isfinite(v[k])]
            if len({c for c, _ in pts}) >= 2:
                fits.append(estimator.fit(*zip(*pts)))
        return fits

    def predicted(self, f: estimator.LinearFit, tags: dict, device: str, runs: int) -> None:
        per_round = self.round_fits(tags)
        for slo in self.p.slos_s:
            row = {"kind": "depth", **tags, "method": "regression", "slo_s": slo, "runs": runs, "cannot_help": False}
            try:
                row["depth"] = estimator.predict_depth(f, slo, device=device)
            except estimator.DeviceCannotMeetSlo as exc:
                row.update(depth=0, cannot_help=True, reason=str(exc))
            each = [_depth_or_zero(g, slo, device) for g in per_round] + [row["depth"]]
            row.update(depth_low=min(each), depth_high=max(each), searches=len(per_round),
                       interval="the fit of all rounds and of each round alone")
            self.rows.append(row)

    async def stress(self, pool, tags: dict) -> None:
        """Table III's stress test, this process's share of ``stress_repeats``: the paper's climb first, then
        each further search measures the bracket afresh from the climb's depth (:func:`estimator.stress_again`).
        One ``stress_search`` row per search; the ``depth`` row keeps the climb's depth and runs (the paper's
        procedure) with ``depth_low`` / ``depth_high`` over this process's searches, bracketed only if every
        one was."""
        found: dict[float, list[estimator.Search]] = {slo: [] for slo in self.p.slos_s}
        first = self.searches[0]
        for rep in self.searches:
            seen: dict[int, float] = {}   # each search measures its own levels (shared by its SLOs)

            async def measure(c: int, rep=rep, seen=seen) -> float:
                if c not in seen:
                    seen[c] = await self.level(pool, c, {**tags, "purpose": "stress", "search": rep}, warm=False)
                return seen[c]

            for slo in sorted(self.p.slos_s):
                if rep == first:
                    s = await estimator.stress_test(measure, slo, step=self.p.stress_step, max_level=self.p.stress_max)
                else:
                    s = await estimator.stress_again(measure, slo, found[slo][0].depth, step=self.p.stress_step,
                                                     max_level=self.p.stress_max)
                found[slo].append(s)
                self.rows.append({"kind": "stress_search", **tags, "method": "stress", "slo_s": slo, "search": rep,
                                  "depth": s.depth, "runs": s.runs, "bracketed": s.bracketed,
                                  "levels": " ".join(f"{c}{'+' if ok else '-'}" for c, _, ok in s.points)})
        for slo, ss in found.items():
            ds = [s.depth for s in ss]
            self.rows.append({"kind": "depth", **tags, "method": "stress", "slo_s": slo, "depth": ss[0].depth,
                              "runs": ss[0].runs, "cannot_help": ss[0].depth == 0,
                              "bracketed": all(s.bracketed for s in ss), "depth_low": min(ds), "depth_high": max(ds),
                              "searches": len(ss), "search_depths": ", ".join(map(str, ds)),
                              "interval": "the depths of every stress search"})


def _depth_or_zero(f: estimator.LinearFit, slo: float, device: str) -> int:
    try:
        return estimator.predict_depth(f, slo, device=device)
    except estimator.DeviceCannotMeetSlo:
        return 0


async def _warm_emulated(prof: Profiler, pool: list[str]) -> None:
    """The emulated device's embeddings of the pool, computed before its rounds (phase warmup)."""
    for i in range(0, len(pool), 32):
        async with prof.sess.post(prof.svc.url + "/embed", json={"inputs": pool[i:i + 32]}) as r:
            await r.read()


async def _device(prof: Profiler, pool, device: str, tags: dict, stress: bool) -> estimator.LinearFit:
    prof.svc.admin(active=[device], depths={device: BIG})
    if device == "emulated":
        await _warm_emulated(prof, pool)
    by: Levels = prof.p.profile_levels if tags["experiment"] == "base" else prof.p.scaling_levels
    levels = by.cpu if device == "cpu" else by.accelerator
    f = await prof.fit(pool, levels, tags)
    prof.predicted(f, tags, "CPU" if device == "cpu" else "accelerator", len(levels))
    if stress:
        await prof.stress(pool, tags)
    return f


class Tags:
    """Row tags: experiment, device (and the name of what it runs on), pair, query length, CPU threads."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def __call__(self, experiment: str, device: str, pair: str | None, tokens: int, threads: int) -> dict:
        name = self.names.get(device, device)
        if device == "emulated" and pair:
            name = f"emulated ~{emulation.pair(pair).accelerator}"
        return {"experiment": experiment, "device": device, "device_name": name, "pair": pair or "",
                "query_tokens": tokens, "cpu_threads": threads, "source": source_of(device)}


async def _run(svc, p: Params, pools: Pools, encoder, k: int = 0) -> tuple[dict, list[dict]]:
    """Service process ``k``: the laws the emulated accelerator ran with, per pair, and its rows."""
    info = svc.admin()
    threads, acc, tags = info["cpu_threads"], svc.accelerator, Tags(info["device_names"])
    base, n = p.query_tokens, p.service_processes
    laws = {}
    async with load.session() as sess:
        first = first_index(p.stress_repeats, k, n)
        prof = Profiler(svc, sess, p, range(first, first + share(p.stress_repeats, k, n)))
        prof.rows += await overhead(svc, sess, p, pools(base), encoder, "profile", share(p.overhead_repeats, k, n))
        cpu = await _device(prof, pools(base), "cpu", tags("base", "cpu", None, base, threads), stress=True)
        for pair in run_pairs(p, acc):
            if acc == "emulated":
                law = emulation.emulated_law(cpu.alpha, cpu.beta, pair)
                laws[pair] = {"alpha": law.alpha, "beta": law.beta}
                svc.admin(emulated_law=laws[pair])
            await _device(prof, pools(base), acc, tags("base", acc, pair, base, threads), stress=True)
        if k == 0:   # Figures 5 and 6: drawn only, from the first service process
            await _lengths(prof, pools, p, threads, acc, tags)
            await _cores(prof, pools, p, threads, tags)
    return laws, prof.rows + decision_rows(svc, "profile")


async def _lengths(prof: Profiler, pools: Pools, p: Params, threads: int, acc: str, tags: Tags) -> None:
    """Figure 5: regression depths of both devices at each query length (first pair)."""
    pair = run_pairs(p, acc)[0]
    for n in p.lengths:   # every length measured alike (same levels, one after another)
        f = await _device(prof, pools(n), "cpu", tags("length", "cpu", None, n, threads), stress=False)
        if acc == "emulated":
            prof.svc.admin(emulated_law=vars(emulation.emulated_law(f.alpha, f.beta, pair)))
        await _device(prof, pools(n), acc, tags("length", acc, pair, n, threads), stress=False)


async def _cores(prof: Profiler, pools: Pools, p: Params, threads: int, tags: Tags) -> None:
    """Figure 6: the CPU's regression depths against the CPU instance's thread count (cores)."""
    for n in p.cpu_cores:
        prof.svc.admin(cpu_threads=n)
        await _device(prof, pools(p.query_tokens), "cpu", tags("cores", "cpu", None, p.query_tokens, n), stress=False)
    prof.svc.admin(cpu_threads=threads)


def _encoder(model_path):
    """The bare model in the load generator's process (the service's overhead is measured against it)."""
    from ..system.encoder import Encoder

    return Encoder(model_path)


@step("profile", writes="profile",
      keys=("accelerator", "model", "query_tokens", "slos_s", "pairs", "serving_pairs", "service_processes", "rounds",
            "profile_levels",
            "scaling_levels", "stress_step", "stress_max", "stress_repeats", "lengths", "cpu_cores",
            "cpu_instance_threads", "text_pool", "batch_delay_ms", "start_timeout_s", "overhead_batch",
            "overhead_repeats"))
def profile(ctx: Context) -> Result:
    p: Params = ctx.params
    clock = Clock()
    pools = Pools(load_fast_tokenizer(p.model), p.text_pool, ctx.seed)
    rows, laws, started, encoder = [], {}, [], None
    for k in range(p.service_processes):   # fresh service processes, one after another
        with service(p, p.pairs[0], meanwhile=(lambda: _encoder(p.model)) if encoder is None else None) as svc:
            encoder = encoder or svc.prepared
            got_laws, got = asyncio.run(_run(svc, p, pools, encoder, k))
            rows += [{**r, "process": k} for r in got]
            laws[k] = got_laws
            started.append(svc.started_s)
            acc, info = svc.accelerator, svc.admin()
    df = pd.DataFrame(rows)
    method = ("Closed loop (Section V-A3) against `bench windve serve` on 127.0.0.1 (every instance warmed before "
              "/health said ready): C queries of exact token "
              "length sent at once over HTTP (/embed), the next round only when all answered; a level's latency "
              "is the median over rounds of each round's slowest query. Per device (the other queue off): "
              "latency at the profile levels, fit t = alpha*C + beta (alpha, beta >= 0, NNLS), predicted depth "
              "per SLO; stress test in steps of 8 until the SLO fails. " + accelerator_words(acc, info) +
              f" Everything in {p.service_processes} fresh service processes, one after another (rows carry `process`);"
              " Figures 5/6 (drawn only) in the first." +
              " Figures 5/6: regression depths per query length and per CPU-instance thread count. Table III: the "
              f"stress test {p.stress_repeats} time(s) per cell over the processes, each process's first the paper's "
              "climb, a further one in the same process re-measuring the bracket afresh from its depth (down while it "
              "fails, up while the next passes); the regression depth also from each round alone. Before the profile, "
              "the service's overhead against the "
              "bare model (as the serving step, in this step's own service process); every request's Algorithm 1 "
              "decision time recorded by the service (`dispatch` rows).")
    prov = {"accelerator": acc, "service_info": info, "service_start_s": started, "step_wall_s": clock(),
            "service_processes": p.service_processes,
            **({"emulated_laws": {str(k): v for k, v in laws.items()}} if acc == "emulated" else {})}
    return Result(records=df, method=method, provenance=prov)
