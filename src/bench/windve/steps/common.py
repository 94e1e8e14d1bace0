"""Shared pieces of the WindVE steps: which accelerator a step measures, the service child process of a
step, the query pools, and the paper's closed loop at one concurrency (Section V-A3: C queries at once,
the next batch only when all have answered; the SLO is met when every query of the batch finished
within it).

The accelerator (profile key ``windve.accelerator``): ``auto`` (default) measures the CUDA GPU where there
is one, the paper's setting (GPU instance + CPU offload), and emulates one only where there is none;
``emulated`` asks for the emulated accelerator even beside a GPU (the service's ``--prefer-emulated``);
``cuda`` requires the GPU (a configuration error without one). A measured GPU stands for the paper's GPU
pair (:data:`MEASURED_PAIR`); its rows say ``source=measured``."""
from __future__ import annotations

import contextlib
import time

import numpy as np

from bench.core import devices
from bench.core.errors import BenchError, ConfigError

from .. import client
from ..paper_values import MEASURED_PAIR
from ..settings import free_port
from ..textgen import exact_length_texts

PLACEHOLDER_LAW = (0.001, 0.0)   # emulated law until the CPU fit of this run sets the real one


def resolve_accelerator(params: dict) -> str:
    """``cuda`` or ``emulated``: what the step's service will run as its accelerator instance."""
    want = params.get("accelerator", "auto")
    if want not in ("auto", "emulated", "cuda"):
        raise ConfigError(f"windve.accelerator must be auto, emulated or cuda, got {want!r}")
    has_gpu = devices.cuda_available()
    if want == "cuda" and not has_gpu:
        raise ConfigError("windve.accelerator is 'cuda' but no CUDA GPU is usable here; use 'auto' (the GPU where "
                          "there is one, else emulated) or 'emulated'")
    return "cuda" if has_gpu and want != "emulated" else "emulated"


def source_of(device: str) -> str:
    return "emulated" if device == "emulated" else "measured"


def run_pairs(params: dict, acc: str, key: str = "pairs") -> list[str]:
    """The paper pairs a step runs: each emulated pair of the profile, or the one pair a real accelerator
    stands for (the others need their hardware)."""
    if acc == "emulated":
        return list(params.get(key) or params["pairs"])
    return [MEASURED_PAIR[acc]]


def accelerator_words(acc: str, info: dict) -> str:
    """The method's sentence on the accelerator a step ran."""
    if acc == "emulated":
        return ("The accelerator is EMULATED (no GPU here, or asked for): its law is this run's CPU fit times the "
                "pair's paper ratios (alpha 0.21 / 0.12; beta 0.27/0.32, 0.24/0.85); it answers with the real "
                "model's embeddings.")
    return (f"The accelerator is the {acc.upper()} device {info['device_names'].get(acc, acc)}, MEASURED (the "
            f"paper's setting: GPU instance + CPU offload), compared with the paper's {MEASURED_PAIR[acc]} pair.")


def service_args(params: dict, pair: str | None, offload: bool = True) -> list[str]:
    """The ``bench windve serve`` arguments of a step; ``--prefer-emulated`` only when the profile asks
    for the emulated accelerator (``--emulate`` alone is the fallback where no GPU is found)."""
    args = ["--calibration-tokens", str(params["query_tokens"]), "--batch-delay-ms", str(params["batch_delay_ms"]),
            "--acc-depth", "1", "--cpu-depth", "1", "--max-client-batch-size", "32"]
    if pair:
        args += ["--emulate", pair, "--emulated-alpha", str(PLACEHOLDER_LAW[0]),
                 "--emulated-beta", str(PLACEHOLDER_LAW[1])]
        if params.get("accelerator", "auto") == "emulated":
            args.append("--prefer-emulated")
    if params.get("cpu_instance_threads"):
        args += ["--cpu-threads", str(params["cpu_instance_threads"])]
    if params.get("model"):
        args += ["--model", params["model"]]
    if not offload:
        args.append("--no-offload")
    return args


@contextlib.contextmanager
def service(params: dict, pair: str | None, *, offload: bool = True, extra: list[str] | None = None,
            meanwhile=None):
    """``bench windve serve`` on a free 127.0.0.1 port for one step; stopped on exit, also on failure.
    ``meanwhile()`` runs while the service loads its model and warms up (before /health is awaited).
    The service's accelerator must be the one :func:`resolve_accelerator` expects (``svc.accelerator``)."""
    acc = resolve_accelerator(params)
    svc = client.ServiceProcess(service_args(params, pair, offload) + (extra or []), free_port(),
                                start_timeout_s=params["start_timeout_s"])
    try:
        svc.start()
        if meanwhile is not None:
            meanwhile()
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


async def closed_level(sess, url: str, pool: list[str], c: int, rounds: int, warmup: int) -> list[dict]:
    """``warmup`` + ``rounds`` closed-loop rounds of ``c`` concurrent queries; one row per round."""
    if c < 1:
        raise ConfigError(f"concurrency must be >= 1, got {c}")
    rows = []
    for r in range(warmup + rounds):
        res = await client.closed_round(sess, url, client.round_texts(pool, c, r * c))
        rows.append(round_row(res, c, r, "warmup" if r < warmup else "measured"))
    return rows


def round_row(res: list[dict], c: int, r: int, phase: str) -> dict:
    """Per-round statistics: max and median latency, answers by status and by device."""
    lat = np.array([x["latency_s"] for x in res])
    ok = [x for x in res if x["status"] == 200]
    row = {"concurrency": c, "round": r, "phase": phase, "n": len(res), "n_ok": len(ok),
           "n_busy": sum(x["status"] == 429 for x in res), "n_error": sum(x["status"] not in (200, 429) for x in res),
           "latency_max_s": float(lat.max()), "latency_p50_s": float(np.median(lat)),
           "dispatch_us_max": float(np.nanmax([x["dispatch_us"] for x in res] or [np.nan]))}
    for dev in ("emulated", "cpu", "cuda"):
        mine = [x["latency_s"] for x in ok if x["device"] == dev]
        row[f"n_{dev}"] = len(mine)
        row[f"latency_max_{dev}_s"] = float(max(mine)) if mine else np.nan
    return row


def level_stat(rows: list[dict], key: str = "latency_max_s") -> float:
    """The latency that decides a level: the median over measured rounds of each round's max."""
    vals = [r[key] for r in rows if r["phase"] == "measured" and not np.isnan(r[key])]
    return float(np.median(vals)) if vals else float("inf")


def all_answered(rows: list[dict]) -> bool:
    return all(r["n_ok"] == r["n"] for r in rows)


class Clock:
    """Wall seconds since the step began (reported in provenance as the step's own time)."""

    def __init__(self):
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0
