"""What WindVE's steps share (Section V-A): which accelerator a step measures, the ``bench windve serve``
child of a step, the query pools, the step's clock, and the ``profile`` records read back as the
``serving`` step's starting point (the CPU fit and the regression depths).

The accelerator (profile key ``windve.accelerator``): ``auto`` (default) measures the CUDA GPU where there
is one, the paper's setting (GPU instance + CPU offload), and emulates one only where there is none;
``emulated`` asks for the emulated accelerator even beside a GPU (the service's ``--prefer-emulated``);
``cuda`` requires the GPU (a configuration error without one). A measured GPU stands for the paper's GPU
pair (:data:`MEASURED_PAIR`); its rows say ``source=measured``."""
from __future__ import annotations

import contextlib
import time

import pandas as pd

from bench.core.machine import devices
from bench.core.base.errors import BenchError, ConfigError

from .. import load
from ..paper_values import MEASURED_PAIR
from ..params import Params
from ..system.service_config import free_port
from ..system.textgen import exact_length_texts

PLACEHOLDER_LAW = (0.001, 0.0)   # emulated law until the CPU fit of this run sets the real one


def resolve_accelerator(want: str) -> str:
    """``cuda`` or ``emulated``: what a step's service will run as its accelerator instance, given the
    profile's ``accelerator`` (auto, emulated or cuda)."""
    if want not in ("auto", "emulated", "cuda"):
        raise ConfigError(f"windve.accelerator must be auto, emulated or cuda, got {want!r}")
    has_gpu = devices.cuda_available()
    if want == "cuda" and not has_gpu:
        raise ConfigError("windve.accelerator is 'cuda' but no CUDA GPU is usable here; use 'auto' (the GPU where "
                          "there is one, else emulated) or 'emulated'")
    return "cuda" if has_gpu and want != "emulated" else "emulated"


def source_of(device: str) -> str:
    return "emulated" if device == "emulated" else "measured"


def run_pairs(p: Params, acc: str, serving: bool = False) -> list[str]:
    """The paper pairs a step runs: each emulated pair of the profile (``serving_pairs`` for the serving
    step's fine-tuning, when set), or the one pair a real accelerator stands for (the others need their
    hardware)."""
    if acc == "emulated":
        return list((p.serving_pairs if serving else None) or p.pairs)
    return [MEASURED_PAIR[acc]]


def accelerator_words(acc: str, info: dict) -> str:
    """The method's sentence on the accelerator a step ran."""
    if acc == "emulated":
        from ..system.emulation import PAPER_INPUTS

        taken = "; ".join(f"{i.name} {i.value:g}{(' ' + i.unit) if i.unit else ''}" for i in PAPER_INPUTS)
        return ("The accelerator is EMULATED (no GPU here, or asked for): its law is this run's CPU fit times the "
                f"pair's paper ratios ({taken}; Section V-B, Figure 4); it answers with the real model's embeddings.")
    return (f"The accelerator is the {acc.upper()} device {info['device_names'].get(acc, acc)}, MEASURED (the "
            f"paper's setting: GPU instance + CPU offload), compared with the paper's {MEASURED_PAIR[acc]} pair.")


def service_args(p: Params, pair: str | None, offload: bool = True) -> list[str]:
    """The ``bench windve serve`` arguments of a step; ``--prefer-emulated`` only when the profile asks
    for the emulated accelerator (``--emulate`` alone is the fallback where no GPU is found)."""
    args = ["--calibration-tokens", str(p.query_tokens), "--batch-delay-ms", str(p.batch_delay_ms),
            "--acc-depth", "1", "--cpu-depth", "1", "--max-client-batch-size", "32"]
    if pair:
        args += ["--emulate", pair, "--emulated-alpha", str(PLACEHOLDER_LAW[0]),
                 "--emulated-beta", str(PLACEHOLDER_LAW[1])]
        if p.accelerator == "emulated":
            args.append("--prefer-emulated")
    if p.cpu_instance_threads:
        args += ["--cpu-threads", str(p.cpu_instance_threads)]
    if p.model:
        args += ["--model", p.model]
    if not offload:
        args.append("--no-offload")
    return args


@contextlib.contextmanager
def service(p: Params, pair: str | None, *, offload: bool = True, extra: list[str] | None = None, meanwhile=None):
    """``bench windve serve`` on a free 127.0.0.1 port for one step; stopped on exit, also on failure.
    ``meanwhile()`` runs while the service loads its model and warms up (before /health is awaited); its
    value is the service's ``prepared``. The service's accelerator must be the one
    :func:`resolve_accelerator` expects (``svc.accelerator``)."""
    acc = resolve_accelerator(p.accelerator)
    svc = load.ServiceProcess(service_args(p, pair, offload) + (extra or []), free_port(),
                              start_timeout_s=p.start_timeout_s)
    try:
        svc.start()
        svc.prepared = meanwhile() if meanwhile is not None else None
        svc.wait_healthy()
        got = svc.admin()["accelerator"]
        if got != acc:
            raise BenchError(f"windve service runs accelerator {got!r}, the step expected {acc!r}:\n{svc.log_tail()}")
        svc.accelerator = acc
        yield svc
    finally:
        svc.stop()


class Pools:
    """Query texts of each token length (``text_pool`` distinct texts, cycled by the rounds)."""

    def __init__(self, tokenizer, size: int, seed: int):
        self.tokenizer, self.size, self.seed = tokenizer, size, seed
        self._pools: dict[int, list[str]] = {}

    def __call__(self, length: int) -> list[str]:
        if length not in self._pools:
            self._pools[length] = exact_length_texts(self.tokenizer, self.size, length, self.seed + length)
        return self._pools[length]


class Clock:
    """Wall seconds since the step began (reported in provenance as the step's own time)."""

    def __init__(self):
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0


def profile_depths(df: pd.DataFrame) -> tuple[dict, dict]:
    """(CPU base fit {alpha, beta}, regression depths {(device, pair, slo): depth}) from profile records: the
    median over the profile's fresh service processes."""
    fits = df[(df.kind == "fit") & (df.experiment == "base") & (df.device == "cpu")]
    if fits.empty:
        raise BenchError("the profile records hold no CPU fit of the base experiment")
    d = df[(df.kind == "depth") & (df.experiment == "base") & (df.method == "regression")]
    depths = {(dev, pair, float(slo)): int(g.depth.median()) for (dev, pair, slo), g in
              d.groupby(["device", "pair", "slo_s"])}
    return {"alpha": float(fits.alpha.median()), "beta": float(fits.beta.median())}, depths


def share(total: int, k: int, n: int) -> int:
    """Service process ``k``'s part of ``total`` repeats over ``n`` processes: as even as it goes, the first
    ones taking one more, and at least one each (so a process always measures what its rows need)."""
    base, extra = divmod(max(total, 1), max(n, 1))
    return max(1, base + (1 if k < extra else 0))


def first_index(total: int, k: int, n: int) -> int:
    """The number of the first repeat service process ``k`` runs (repeats numbered across processes)."""
    return sum(share(total, i, n) for i in range(k))


async def overhead(svc, sess, p: Params, pool, encoder, step: str, repeats: int | None = None) -> list[dict]:
    """The CPU-only service against the bare model on the same cores and threads, repeats interleaved
    (bare, service, bare, ...) so machine noise hits both alike; the first pair is warm-up. Each step
    measures it in its own fresh service process (``step``), so the share's interval can resample the
    processes (run-to-run noise), and each measured pair gives one paired ratio (``ratio`` on the service
    row: service throughput / the bare model's just before it)."""
    import os

    import torch

    batch = p.overhead_batch
    repeats = p.overhead_repeats if repeats is None else repeats
    info = svc.admin(active=["cpu"], depths={"cpu": batch})
    texts = pool[:batch]
    before = os.sched_getaffinity(0)
    rows = []
    for i in range(repeats + 1):
        phase = "warmup" if i == 0 else "measured"
        os.sched_setaffinity(0, set(info["cpu_cores"]))
        torch.set_num_threads(info["cpu_threads"])
        try:
            t0 = time.perf_counter()
            encoder.embed(texts)
            bare = time.perf_counter() - t0
        finally:
            os.sched_setaffinity(0, before)
        got = (await load.closed_level(sess, svc.url, pool, batch, 1, 0))[0]
        for mode, sec, n in (("bare_model", bare, batch), ("service", got["latency_max_s"], got["n_ok"])):
            rows.append({"kind": "overhead", "mode": mode, "repeat": i, "batch": batch, "phase": phase,
                         "seconds": sec, "throughput": n / sec, "cpu_threads": info["cpu_threads"],
                         "cpu_cores": ",".join(map(str, info["cpu_cores"])), "source": "measured",
                         "service_process": step,
                         **({"ratio": (n / sec) / (batch / bare)} if mode == "service" else {})})
    return rows


def decision_rows(svc, step: str) -> list[dict]:
    """One ``dispatch`` row per request the step's service process decided (Algorithm 1's own decision time,
    the deadline prediction included, recorded by the service per request: ``GET /admin/decisions``): wall
    time (``dispatch_us``) and the event loop thread's CPU time in it (``dispatch_cpu_us``)."""
    got = svc.decisions()
    return [{"kind": "dispatch", "request": i, "dispatch_us": w, "dispatch_cpu_us": c, "service_process": step,
             "source": "measured"} for i, (w, c) in enumerate(zip(got["dispatch_us"], got["dispatch_cpu_us"]))]
