"""The WindVE embedding service (Figure 3 B): device instances behind the queue manager (Algorithm 1).

:class:`EmbeddingService` holds one instance per planned device (the detector's plan, Section IV-C: a
CUDA GPU when there is one, measured; the emulated accelerator only without one or on request), the queue
manager with the depths (C_max per device, Section IV-B) and, when an SLO is set, deadline admission
(:mod:`.admission`); it warms every instance before it says ready (:mod:`.warmup`). The HTTP layer, shaped
like text-embeddings-inference, is :mod:`.app`.

A benchmark control (``reconfigure``, ``POST /admin/config``) changes depths, offload, active devices, the
SLO, the emulated law or the CPU cores while the service is idle, so a measurement sweeps configurations
without reloading the model.
"""
from __future__ import annotations

import array
import asyncio
import contextlib
import dataclasses
import time

import numpy as np

from bench.core.base.errors import ConfigError

from . import admission, detector, emulation, estimator, warmup
from .encoder import Encoder
from .instances import EmulatedAccelerator, Instance, TorchInstance
from .prometheus import Metrics
from .queue_manager import QueueManager
from .service_config import ServiceConfig
from .textgen import exact_length_texts


@dataclasses.dataclass
class Embedded:
    """An accepted request's embeddings, response headers, device, and its batch's predicted end."""

    vectors: np.ndarray
    headers: dict
    device: str
    predicted_finish: float | None = None


class RequestError(Exception):
    """A request the service refuses: HTTP status, TEI-style error type, message."""

    def __init__(self, status: int, error_type: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.error_type, self.headers = status, error_type, headers or {}


DECISIONS_KEPT = 1_000_000   # per-request decision times kept for /admin/decisions (8 MB at most)
RECONFIGURABLE = ("depths", "offload", "active", "emulated_law", "cpu_threads", "reverse_cores", "batch_delay_ms",
                  "slo_s")   # what ``reconfigure`` (``POST /admin/config``) changes


class EmbeddingService:
    """Device instances (one per planned device, each with its own model copy) behind Algorithm 1."""

    def __init__(self, cfg: ServiceConfig, encoder: Encoder | None = None, found: detector.Found | None = None):
        self.cfg = cfg.check()
        self.found = found or detector.detect()
        self.plan = detector.plan(self.found, cfg.heterogeneous, emulate=cfg.emulate is not None,
                                  prefer_emulated=cfg.prefer_emulated)
        self.encoder = encoder or Encoder(cfg.model_path)
        self.metrics = Metrics()
        self.decisions_us = array.array("d")   # every request's Algorithm 1 decision time (GET /admin/decisions)
        self.decisions_cpu_us = array.array("d")   # ... and the event loop thread's CPU time in it
        self.instances: dict[str, Instance] = {d: self._make_instance(d) for d in self.plan.devices}
        for inst in self.instances.values():
            inst.on_batch = self.metrics.batch_done
        self.active = list(self.plan.devices)
        self.depths = {d: (cfg.cpu_depth if d == "cpu" else cfg.acc_depth) for d in self.plan.devices}
        self.offload = self.plan.heterogeneous
        self.slo_s = cfg.slo_s
        self.manager = self._manager(self.active, self.depths, self.offload, self.slo_s)
        if cfg.slo_s is not None and "cpu" in self.active and self.offload:
            self.check_cpu_meets_slo(cfg.slo_s)
        self.ready = False                  # every instance warm (/health 200)
        self.warm_error: str | None = None  # the warm-up failed: /health says so, ``serve`` exits
        self._warm_texts: list[str] = []
        self.warm_task: asyncio.Task | None = None
        self._warm_lock = asyncio.Lock()
        self._publish_config()

    # -- construction -------------------------------------------------------------------------
    def _cpu_threads(self) -> int:
        return self.cfg.cpu_threads or max(1, len(self.found.cpu_cores) - 1)

    def _make_instance(self, dev: str) -> Instance:
        delay = self.cfg.batch_delay_ms / 1000.0
        if dev == "cpu":
            n = self._cpu_threads()
            cores = detector.cpu_cores_for_instance(self.found, n, self.cfg.reverse_cores)
            return TorchInstance("cpu", self.encoder.copy_to("cpu"), threads=n, cores=cores,
                                 batch_delay_s=delay, max_batch=self.cfg.max_batch)
        if dev == "emulated":
            return EmulatedAccelerator("emulated", self.encoder.copy_to("cpu"), self._emulated_law(),
                                       batch_delay_s=delay, max_batch=self.cfg.max_batch)
        if dev == "cuda":  # pragma: no cover - CUDA machines only
            return TorchInstance("cuda", self.encoder.copy_to("cuda"), threads=None, batch_delay_s=delay,
                                 max_batch=self.cfg.max_batch)
        raise ConfigError(f"no instance type for device {dev!r}")  # pragma: no cover - NPU needs torch_npu

    def _manager(self, order, depths, offload, slo_s) -> QueueManager:
        return QueueManager([d for d in self.plan.devices if d in order], depths, offload, slo_s, self._predict)

    def _predict(self, dev: str, n: int, arrival: float, texts: list[str] | None = None) -> admission.Prediction | None:
        """When ``n`` new queries (``texts``, when known) on ``dev`` would complete (None: no law yet)."""
        inst = self.instances[dev]
        law = inst.admission_law()
        if law is None:
            return None
        slo = self.manager.slo_s if self.manager.slo_s is not None else float("inf")   # no SLO: predicted only
        return admission.predict(inst.backlog(), n, arrival, time.perf_counter(), law.latency, slo,
                                 inst.batch_delay_s, inst.max_batch, margin=inst.residuals.margin(cap=slo / 2),
                                 extra_s=inst.extra_s(texts) if texts else 0.0)

    def _emulated_law(self) -> emulation.LinearLaw:
        if self.cfg.emulated_alpha is not None:
            return emulation.LinearLaw(self.cfg.emulated_alpha, self.cfg.emulated_beta)
        fit = self.calibrate_cpu(self.cfg.calibration_tokens)
        return emulation.emulated_law(fit.alpha, fit.beta, self.cfg.emulate)

    def calibrate_cpu(self, tokens: int, levels=(1, 4, 8)) -> estimator.LinearFit:
        """The bare CPU model's latency fit at a few batch sizes (for an emulated law given no alpha/beta)."""
        import torch

        texts = exact_length_texts(self.encoder.tokenizer, max(levels), tokens, seed=0)
        torch.set_num_threads(self._cpu_threads())
        self.encoder.embed(texts[:2])
        cs, ts = [], []
        for c in levels:
            t0 = time.perf_counter()
            self.encoder.embed(texts[:c])
            cs.append(c)
            ts.append(time.perf_counter() - t0)
        return estimator.fit(cs, ts)

    def check_cpu_meets_slo(self, slo_s: float) -> None:
        """Equation 11 at start: one query on the CPU must fit in the SLO, else offload cannot help."""
        inst = self.instances["cpu"]
        text = exact_length_texts(self.encoder.tokenizer, 1, self.cfg.calibration_tokens, seed=0)
        inst.encoder.embed(text)
        t0 = time.perf_counter()
        inst.encoder.embed(text)
        one = time.perf_counter() - t0
        if one > slo_s:
            raise estimator.DeviceCannotMeetSlo(
                f"SLO {slo_s:g} s is shorter than one {self.cfg.calibration_tokens}-token query on the CPU "
                f"({one:.3f} s): the CPU cannot help (equation 11); run with heterogeneous computing off")

    # -- life cycle ---------------------------------------------------------------------------
    def framework_cores(self) -> tuple[int, ...]:
        """Cores left to the HTTP framework (Section IV-D: it keeps the low cores, the CPU instance the
        high ones); all cores when the CPU instance has them all."""
        cpu = self.instances.get("cpu")
        used = set(getattr(cpu, "cores", None) or ())
        rest = tuple(c for c in self.found.cpu_cores if c not in used)
        return rest or self.found.cpu_cores

    async def start(self) -> None:
        """Start the instances; the event loop's thread (and the threads it creates) keep to the
        framework's cores, so the CPU instance's cores serve only its batches."""
        import os

        self.pinned = self.framework_cores()
        os.sched_setaffinity(0, set(self.pinned))
        for inst in self.instances.values():
            inst.start()

    def start_warmup(self) -> asyncio.Task:
        """Warm every instance in the background (the server already answers /health with 503)."""
        self.warm_task = asyncio.get_running_loop().create_task(self.warm(), name="windve-warmup")
        return self.warm_task

    async def warm(self) -> None:
        """Run each instance's warm batches not yet run (:mod:`.warmup`); ready once all are warm."""
        async with self._warm_lock:
            self.ready = False
            self.metrics.ready.set(0)
            try:
                for dev, inst in self.instances.items():
                    await warmup.warm(inst, self.depths[dev], self._texts)
            except Exception as exc:  # noqa: BLE001 - reported by /health and ``serve``, not swallowed
                self.warm_error = f"warm-up failed: {type(exc).__name__}: {exc}"
                raise
            self.ready = True
            self.metrics.ready.set(1)

    def _texts(self, k: int) -> list[str]:
        """``k`` warm-up queries of the calibration length."""
        if len(self._warm_texts) < k:
            self._warm_texts = exact_length_texts(self.encoder.tokenizer, max(k, 8), self.cfg.calibration_tokens,
                                                  seed=12345)
        return self._warm_texts[:k]

    async def stop(self) -> None:
        if self.warm_task is not None and not self.warm_task.done():
            self.warm_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.warm_task
        for inst in self.instances.values():
            await inst.stop()

    @property
    def healthy(self) -> bool:
        """Ready (every instance warm) and every active instance running."""
        return self.ready and all(self.instances[d].running for d in self.active)

    def _publish_config(self) -> None:
        m = self.metrics
        for d, inst in self.instances.items():
            m.device_info.labels(d, inst.kind, inst.source).set(1)
            m.queue_depth.labels(d).set(self.depths[d] if d in self.active else 0)
            m.queue_size.labels(d).set(self.manager.length.get(d, 0))
        m.slo.set(self.slo_s or 0)

    def info(self) -> dict:
        law = getattr(self.instances.get("emulated"), "law", None)
        cpu = self.instances.get("cpu")
        return {"model": self.encoder.path, "model_id": self.encoder.model_id, "matryoshka": self.matryoshka,
                "matryoshka_dimensions": self.encoder.matryoshka_dimensions,
                "max_input_length": self.encoder.max_tokens, "dim": self.encoder.dim,
                "devices": list(self.plan.devices), "active": self.active, "depths": self.depths,
                "offload": self.manager.offload, "plan_reason": self.plan.reason,
                "sources": {d: i.source for d, i in self.instances.items()},
                "accelerator": self.plan.accelerator, "device_names": self.device_names(),
                "ready": self.ready, "slo_s": self.slo_s, "admission": "depth" if self.slo_s is None else "depth+deadline",
                "laws": {d: _law_dict(i.admission_law()) for d, i in self.instances.items()},
                "warmed": {d: sorted(i.warmed) for d, i in self.instances.items()},
                "emulated_pair": self.cfg.emulate,
                "emulated_law": _law_dict(law),
                "cpu_threads": getattr(cpu, "threads", None), "cpu_cores": list(getattr(cpu, "cores", None) or []),
                "framework_cores": list(getattr(self, "pinned", ())),
                "batch_delay_ms": self.cfg.batch_delay_ms, "max_client_batch_size": self.cfg.max_client_batch_size}

    def decisions(self, clear: bool = False) -> dict[str, list[float]]:
        """Every request's decision by Algorithm 1 since the start or the last ``clear`` (microseconds, the
        prediction included): wall time (``dispatch_us``) and the thread's CPU time in it (``dispatch_cpu_us``),
        the per-request quantity the paper's < 0.1 ms names."""
        out = {"dispatch_us": self.decisions_us.tolist(), "dispatch_cpu_us": self.decisions_cpu_us.tolist()}
        if clear:
            self.decisions_us, self.decisions_cpu_us = array.array("d"), array.array("d")
        return out

    def tei_info(self) -> dict:
        """``GET /info`` as text-embeddings-inference answers it (its ``Info`` fields), ours under ``windve``.

        TEI's router parameters map onto the service's: ``max_concurrent_requests`` is the sum of the active
        devices' depths C_max (what the queue manager admits at once); ``max_batch_requests`` the instances'
        batch cap (null: a batch takes what its queue holds, at most its depth); ``max_batch_tokens`` that
        many requests at ``max_input_length``; ``auto_truncate`` false (``truncate`` defaults to false, as
        TEI's default); ``tokenization_workers`` the instances (each tokenises its own batches)."""
        import importlib.metadata

        try:
            version = importlib.metadata.version("bench")
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
            version = "unknown"
        cap = self.cfg.max_batch or max(self.depths[d] for d in self.active)
        model = self.encoder.model
        return {"model_id": self.encoder.model_id, "model_sha": self.encoder.model_sha,
                "model_dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
                "served_model_name": self.model_name,
                "model_type": {"embedding": {"pooling": "mean"}},
                "max_concurrent_requests": sum(self.depths[d] for d in self.active),
                "max_input_length": self.encoder.max_tokens, "max_batch_tokens": cap * self.encoder.max_tokens,
                "max_batch_requests": self.cfg.max_batch, "max_client_batch_size": self.cfg.max_client_batch_size,
                "auto_truncate": False, "tokenization_workers": len(self.instances),
                "version": version, "sha": None, "docker_label": None,
                "windve": self.info()}

    def tokenize(self, texts: list[str], add_special_tokens: bool = True) -> list[list[dict]]:
        """TEI's ``/tokenize``: per text, its tokens as ``{id, text, special, start, stop}`` (character
        offsets into the text; a special token has no offsets and its own text)."""
        tok = self.encoder.tokenizer
        enc = tok(texts, add_special_tokens=add_special_tokens, truncation=False, return_offsets_mapping=True,
                  return_special_tokens_mask=True)
        out = []
        for text, ids, offs, special in zip(texts, enc["input_ids"], enc["offset_mapping"],
                                            enc["special_tokens_mask"]):
            out.append([{"id": int(i), "text": tok.convert_ids_to_tokens(int(i)) if sp else text[a:b],
                         "special": bool(sp), "start": None if sp else int(a), "stop": None if sp else int(b)}
                        for i, (a, b), sp in zip(ids, offs, special)])
        return out

    def decode(self, ids: list, skip_special_tokens: bool = True) -> list[str]:
        """TEI's ``/decode``: the text of each list of ids (one flat list: one text), with TEI's checks (an
        empty list 400 ``empty``, a batch over the client limit 413). An id outside the vocabulary is 422
        ``tokenizer``: TEI's tokenizer drops such an id silently, answering a shorter text than the ids say."""
        batch = ids if ids and isinstance(ids[0], list) else [ids]
        if len(batch) > self.cfg.max_client_batch_size:
            raise RequestError(413, "validation", f"batch size {len(batch)} > maximum allowed batch size "
                                                  f"{self.cfg.max_client_batch_size}")
        tok = self.encoder.tokenizer
        vocab = len(tok)
        for i, row in enumerate(batch):
            where = f"ids[{i}]" if batch is ids else "ids"
            if not row:
                raise RequestError(400, "empty", f"`{where}` cannot be empty")
            bad = next((x for x in row if not 0 <= x < vocab), None)
            if bad is not None:
                raise RequestError(422, "tokenizer", f"`{where}` holds id {bad}, outside the tokenizer's vocabulary "
                                                     f"(ids 0 to {vocab - 1})")
        return tok.batch_decode(batch, skip_special_tokens=skip_special_tokens)

    @property
    def model_name(self) -> str:
        """The model's name on the OpenAI route (TEI's ``served_model_name``): its hub id unless given one."""
        return self.cfg.served_model_name or self.encoder.model_id

    @property
    def matryoshka(self) -> bool:
        """Trained for truncation (Matryoshka): declared by the model's config or the service's configuration."""
        return self.cfg.matryoshka or self.encoder.matryoshka

    def dimensions(self, n: int | None) -> int | None:
        """The width to cut a request's embeddings to for ``dimensions=n`` (None: the full width), or the
        refusal (422 ``validation``): the model's own width is always accepted; a smaller one only for a
        model trained for truncation (vLLM's refusal otherwise, naming the model and its width), and then
        only one of its declared ``matryoshka_dimensions`` where it declares them."""
        dim, name = self.encoder.dim, self.model_name
        if n is None or n == dim:
            return None
        if n < 1 or n > dim:
            raise RequestError(422, "validation", f"`dimensions` must be between 1 and the model's {dim}, got {n}")
        if not self.matryoshka:
            raise RequestError(422, "validation", (
                f'Model "{name}" does not support matryoshka representation: its embeddings have {dim} dimensions '
                f"and it was not trained for truncation, so changing output dimensions would lead to poor results; "
                f"ask for {dim} or leave `dimensions` out"))
        allowed = self.encoder.matryoshka_dimensions
        if allowed and n not in allowed:
            raise RequestError(422, "validation", f'Model "{name}" only supports {list(allowed)} matryoshka '
                                                  f"dimensions, got {n}")
        return n

    def device_names(self) -> dict[str, str]:
        """What each instance runs on: the CPU's model, the GPU's name, or the emulated pair."""
        from bench.core.machine import devices

        out = {}
        for d in self.instances:
            if d == "cpu":
                out[d] = devices.cpu_model()
            elif d == "emulated":
                out[d] = f"emulated ({self.cfg.emulate})"
            elif d == "cuda":  # pragma: no cover - CUDA machines only
                import torch

                out[d] = torch.cuda.get_device_name(0)
            else:  # pragma: no cover - NPU
                out[d] = d
        return out

    # -- serving ------------------------------------------------------------------------------
    def validate_texts(self, texts, field: str) -> list[str]:
        """TEI's checks and status codes: a body of the wrong shape (not a string or a list of strings) 422,
        an empty input or empty string 400 (``empty``), a batch over the client limit 413 (``validation``);
        token lengths come after admission."""
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list):
            raise RequestError(422, "validation", f"`{field}` must be a string or a list of strings")
        if not texts:
            raise RequestError(400, "empty", f"`{field}` cannot be empty")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise RequestError(422, "validation", f"`{field}[{i}]` must be a string, got {type(t).__name__}")
        if len(texts) > self.cfg.max_client_batch_size:
            raise RequestError(413, "validation", f"batch size {len(texts)} > maximum allowed batch size "
                                                  f"{self.cfg.max_client_batch_size}")
        for i, t in enumerate(texts):
            if not t:
                raise RequestError(400, "empty", f"`{field}[{i}]` cannot be empty")
        return texts

    def _check_lengths(self, texts: list[str]) -> None:
        """413 beyond max tokens; a WordPiece token covers >= 1 character, so short texts skip tokenising."""
        limit = self.encoder.max_tokens
        long = [i for i, t in enumerate(texts) if len(t) > limit - 2]
        if long:
            counts = self.encoder.count_tokens([texts[i] for i in long])
            for i, n in zip(long, counts):
                if n > limit:
                    raise RequestError(413, "validation", f"input {i} has {n} tokens; the model takes at most "
                                                          f"{limit} (set `truncate: true` to cut it)")

    async def embed(self, texts: list[str], arrival: float | None = None,
                    truncate: bool = True) -> "Embedded":
        """Algorithm 1 (with deadline admission when an SLO is set) then the chosen device's instance;
        raises RequestError(429) on BUSY. ``arrival``: when the request reached the service. As TEI, the
        overload check comes before tokenising: a refused request costs no tokenizer time (without
        ``truncate``, a text over the model's tokens is then refused with 413)."""
        n = len(texts)
        arrival = time.perf_counter() if arrival is None else arrival
        dev = self.manager.admit(n, arrival, texts)
        # this request's own decision time, read before any await: the manager's last_* fields are the
        # last request's, and by the time this one answers another request has overwritten them
        dispatch_ns = self.manager.last_decision_ns
        self.metrics.dispatch.observe(dispatch_ns / 1e9)
        if len(self.decisions_us) < DECISIONS_KEPT:
            self.decisions_us.append(dispatch_ns / 1e3)
            self.decisions_cpu_us.append(self.manager.last_decision_cpu_ns / 1e3)
        if dev is None:
            raise self.busy(self.manager.last_reason)
        pred = self.manager.last_prediction
        if not truncate:
            try:
                self._check_lengths(texts)
            except RequestError:
                self.manager.release(dev, n)
                raise
        t0 = time.perf_counter()
        self.metrics.accepted.labels(dev).inc()
        if pred is not None:
            self.metrics.predicted.labels(dev).observe(pred.latency)
        if dev == "cpu" and self.manager.order[0] != "cpu":
            self.metrics.offloaded.inc()
        self.metrics.queue_size.labels(dev).set(self.manager.length[dev])
        try:
            ans = await self.instances[dev].submit(texts, arrival, None if pred is None else pred.finish)
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001 - TEI's answer to a failed inference: 424, error_type backend
            raise RequestError(424, "backend", f"inference failed on {dev}: {type(exc).__name__}: {exc}") from exc
        finally:
            self.manager.release(dev, n)
            self.metrics.queue_size.labels(dev).set(self.manager.length[dev])
        inst = self.instances[dev]
        self.metrics.latency.labels(dev).observe(time.perf_counter() - t0)
        self.metrics.queue_time.labels(dev).observe(ans.queue_s)
        self.metrics.inference_time.labels(dev).observe(ans.compute_s)
        if isinstance(inst, EmulatedAccelerator):
            self.metrics.overruns.labels(dev).set(inst.overruns)
        headers = {"x-device": dev, "x-source": inst.source, "x-queue-time": f"{ans.queue_s * 1e3:.3f}",
                   "x-compute-time": f"{ans.compute_s * 1e3:.3f}", "x-inference-time": f"{ans.compute_s * 1e3:.3f}",
                   "x-batch-size": str(ans.batch_size),
                   "x-dispatch-us": f"{dispatch_ns / 1e3:.2f}"}
        if pred is not None:
            headers["x-predicted-time"] = f"{pred.latency * 1e3:.3f}"
            headers["x-predicted-margin"] = f"{pred.margin * 1e3:.3f}"
        if ans.predicted_finish is not None:   # the batch it ran in, as its last member's admission predicted it
            headers["x-predicted-batch-time"] = f"{(ans.predicted_finish - arrival) * 1e3:.3f}"
        return Embedded(ans.vectors, headers, dev, ans.predicted_finish)

    def answered(self, e: "Embedded") -> None:
        """The response of ``e`` is built: what the law missed (answered vs the batch's predicted end, the
        event loop's turn to serialise included) goes into the device's residuals (:mod:`.admission`)."""
        if e.predicted_finish is not None:
            self.instances[e.device].residuals.add(time.perf_counter(), e.predicted_finish)

    def busy(self, reason: str | None) -> "RequestError":
        """The 429 of a BUSY decision (counted once, by the HTTP layer, as overloaded), with its rule."""
        reason = reason or "depth"
        self.metrics.refused.labels(reason).inc()
        msg = ("model is overloaded: every device queue is full" if reason == "depth" else
               f"model is overloaded: no device is predicted to answer within the SLO ({self.slo_s:g} s)")
        return RequestError(429, "overloaded", msg, headers={"Retry-After": "1", "x-refused-by": reason})

    # -- benchmark control --------------------------------------------------------------------
    def reconfigure(self, body: dict) -> None:
        """Apply ``/admin/config`` while idle: depths, offload, active devices, emulated law, CPU cores."""
        if any(self.manager.length.values()):
            raise RequestError(409, "busy", "reconfigure only while no request is in flight")
        unknown = set(body) - set(RECONFIGURABLE)
        if unknown:
            raise RequestError(422, "validation",
                               f"unknown key(s) {sorted(unknown)}; allowed: {sorted(RECONFIGURABLE)}")
        try:
            self._apply(body)
        except ConfigError as exc:
            raise RequestError(422, "validation", str(exc)) from None
        self._publish_config()

    def _apply(self, body: dict) -> None:
        active = list(body.get("active", self.active))
        if not active or any(d not in self.plan.devices for d in active):
            raise ConfigError(f"active devices must be a non-empty subset of {list(self.plan.devices)}, got {active}")
        depths = {**self.depths, **body.get("depths", {})}
        slo = body.get("slo_s", self.slo_s)
        if slo is not None and (isinstance(slo, bool) or not isinstance(slo, (int, float))):
            raise ConfigError(f"slo_s must be a number of seconds > 0 or null, got {slo!r}")
        manager = self._manager(active, depths, bool(body.get("offload", self.offload)), slo)
        if "emulated_law" in body:
            law = emulation.LinearLaw(float(body["emulated_law"]["alpha"]), float(body["emulated_law"]["beta"]))
            if "emulated" not in self.instances:
                raise ConfigError("no emulated accelerator in this service")
            self.instances["emulated"].law = law
        if "cpu_threads" in body or "reverse_cores" in body:
            self._set_cpu(int(body.get("cpu_threads", self._cpu_threads())), body.get("reverse_cores"))
        if "batch_delay_ms" in body:
            for inst in self.instances.values():
                inst.batch_delay_s = float(body["batch_delay_ms"]) / 1000.0
        self.active, self.depths, self.offload, self.manager = active, depths, manager.offload, manager
        self.slo_s = manager.slo_s

    def _set_cpu(self, threads: int, reverse: bool | None) -> None:
        cpu = self.instances.get("cpu")
        if cpu is None or threads < 1:
            raise ConfigError(f"cpu_threads needs a CPU instance and a value >= 1, got {threads}")
        self.cfg.cpu_threads = threads
        if reverse is not None:
            self.cfg.reverse_cores = bool(reverse)
        cpu.set_cores(detector.cpu_cores_for_instance(self.found, threads, self.cfg.reverse_cores), threads)
        if hasattr(self, "pinned"):   # called on the event loop's thread: re-pin the framework
            import os

            self.pinned = self.framework_cores()
            os.sched_setaffinity(0, set(self.pinned))




def _law_dict(law: emulation.LinearLaw | None) -> dict | None:
    return None if law is None else {"alpha": law.alpha, "beta": law.beta}
