"""The WindVE embedding service (Figure 3 B) as an aiohttp app on 127.0.0.1.

aiohttp, because one well-kept asyncio library gives both the server and the load generator's client
(no ASGI server process model to configure, no second HTTP stack in the measurements).

Endpoints shaped like text-embeddings-inference (TEI), which people already run:
- ``POST /embed``: ``{"inputs": str | [str], "normalize": true, "truncate": false}`` -> ``[[float]]``;
- ``POST /v1/embeddings``: OpenAI-compatible (``input``, ``model``, ``encoding_format``);
- ``GET /health``: 200 while every device instance runs, else 503;
- ``GET /metrics``: Prometheus text (:mod:`.metrics`);
- ``GET /info`` and ``POST /admin/config``: the configuration, and a benchmark control that changes
  depths, offload, active devices, the emulated law or the CPU cores while the service is idle (so a
  measurement sweeps configurations without reloading the model; bound to 127.0.0.1 only).

Errors as TEI answers them: 422 for invalid input (empty input, non-string, batch over the client
limit), 413 for a text beyond the model's max tokens without ``truncate``, 400 for a body that is not
JSON, 429 with ``Retry-After`` when the queue manager says BUSY (TEI refuses overload at once with
429: the client may retry elsewhere or later, and no request waits unbounded), 503 when unhealthy.
Each answer carries ``x-device``, ``x-source`` (measured/emulated), queue, compute and dispatch times.
"""
from __future__ import annotations

import base64
import json
import time

import numpy as np
from aiohttp import web

from bench.core.errors import ConfigError

from . import detector, emulation, estimator
from .instances import EmulatedAccelerator, Instance, TorchInstance
from .metrics import Metrics
from .model import Encoder, normalize
from .queue_manager import QueueManager
from .settings import ServiceConfig
from .textgen import exact_length_texts

SERVICE_KEY = web.AppKey("windve_service", object)


class RequestError(Exception):
    """A request the service refuses: HTTP status, TEI-style error type, message."""

    def __init__(self, status: int, error_type: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.error_type, self.headers = status, error_type, headers or {}


class EmbeddingService:
    """Device instances (one per planned device, each with its own model copy) behind Algorithm 1."""

    def __init__(self, cfg: ServiceConfig, encoder: Encoder | None = None, found: detector.Found | None = None):
        self.cfg = cfg.check()
        self.found = found or detector.detect()
        self.plan = detector.plan(self.found, cfg.heterogeneous, emulate=cfg.emulate is not None,
                                  prefer_emulated=cfg.prefer_emulated)
        self.encoder = encoder or Encoder(cfg.model_path)
        self.metrics = Metrics()
        self.instances: dict[str, Instance] = {d: self._make_instance(d) for d in self.plan.devices}
        self.active = list(self.plan.devices)
        self.depths = {d: (cfg.cpu_depth if d == "cpu" else cfg.acc_depth) for d in self.plan.devices}
        self.offload = self.plan.heterogeneous
        self.manager = QueueManager(self.active, self.depths, self.offload)
        if cfg.slo_s is not None and "cpu" in self.active and self.offload:
            self.check_cpu_meets_slo(cfg.slo_s)
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
            return TorchInstance("cuda", self.encoder.copy_to("cuda"), batch_delay_s=delay, max_batch=self.cfg.max_batch)
        raise ConfigError(f"no instance type for device {dev!r}")  # pragma: no cover - NPU needs torch_npu

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

    async def stop(self) -> None:
        for inst in self.instances.values():
            await inst.stop()

    @property
    def healthy(self) -> bool:
        return all(self.instances[d].running for d in self.active)

    def _publish_config(self) -> None:
        m = self.metrics
        for d, inst in self.instances.items():
            m.device_info.labels(d, inst.kind, inst.source).set(1)
            m.queue_depth.labels(d).set(self.depths[d] if d in self.active else 0)
            m.queue_size.labels(d).set(self.manager.length.get(d, 0))

    def info(self) -> dict:
        law = getattr(self.instances.get("emulated"), "law", None)
        cpu = self.instances.get("cpu")
        return {"model": self.encoder.path, "max_input_length": self.encoder.max_tokens, "dim": self.encoder.dim,
                "devices": list(self.plan.devices), "active": self.active, "depths": self.depths,
                "offload": self.manager.offload, "plan_reason": self.plan.reason,
                "sources": {d: i.source for d, i in self.instances.items()},
                "emulated_pair": self.cfg.emulate,
                "emulated_law": None if law is None else {"alpha": law.alpha, "beta": law.beta},
                "cpu_threads": getattr(cpu, "threads", None), "cpu_cores": list(getattr(cpu, "cores", None) or []),
                "framework_cores": list(getattr(self, "pinned", ())),
                "batch_delay_ms": self.cfg.batch_delay_ms, "max_client_batch_size": self.cfg.max_client_batch_size}

    # -- serving ------------------------------------------------------------------------------
    def validate_texts(self, texts, truncate: bool, field: str) -> list[str]:
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list):
            raise RequestError(422, "validation", f"`{field}` must be a string or a list of strings")
        if not texts:
            raise RequestError(422, "validation", f"`{field}` cannot be empty")
        if len(texts) > self.cfg.max_client_batch_size:
            raise RequestError(422, "validation", f"batch size {len(texts)} > maximum allowed batch size "
                                                  f"{self.cfg.max_client_batch_size}")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise RequestError(422, "validation", f"`{field}[{i}]` must be a string, got {type(t).__name__}")
            if not t:
                raise RequestError(422, "validation", f"`{field}[{i}]` cannot be an empty string")
        if not truncate:
            self._check_lengths(texts)
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

    async def embed(self, texts: list[str]) -> tuple[np.ndarray, dict]:
        """Algorithm 1 then the chosen device's instance; raises RequestError(429) on BUSY."""
        n = len(texts)
        dev = self.manager.admit(n)
        self.metrics.dispatch.observe(self.manager.last_decision_ns / 1e9)
        if dev is None:
            self.metrics.rejected.inc()
            raise RequestError(429, "overloaded", "model is overloaded: every device queue is full",
                               headers={"Retry-After": "1"})
        t0 = time.perf_counter()
        self.metrics.accepted.labels(dev).inc()
        if dev == "cpu" and self.manager.order[0] != "cpu":
            self.metrics.offloaded.inc()
        self.metrics.queue_size.labels(dev).set(self.manager.length[dev])
        try:
            ans = await self.instances[dev].submit(texts)
        finally:
            self.manager.release(dev, n)
            self.metrics.queue_size.labels(dev).set(self.manager.length[dev])
        inst = self.instances[dev]
        self.metrics.latency.labels(dev).observe(time.perf_counter() - t0)
        self.metrics.batch.labels(dev).observe(ans.batch_size)
        if isinstance(inst, EmulatedAccelerator):
            self.metrics.overruns.labels(dev).set(inst.overruns)
        headers = {"x-device": dev, "x-source": inst.source, "x-queue-time": f"{ans.queue_s * 1e3:.3f}",
                   "x-compute-time": f"{ans.compute_s * 1e3:.3f}", "x-batch-size": str(ans.batch_size),
                   "x-dispatch-us": f"{self.manager.last_decision_ns / 1e3:.2f}"}
        return ans.vectors, headers

    # -- benchmark control --------------------------------------------------------------------
    def reconfigure(self, body: dict) -> None:
        """Apply ``/admin/config`` while idle: depths, offload, active devices, emulated law, CPU cores."""
        if any(self.manager.length.values()):
            raise RequestError(409, "busy", "reconfigure only while no request is in flight")
        allowed = {"depths", "offload", "active", "emulated_law", "cpu_threads", "reverse_cores", "batch_delay_ms"}
        unknown = set(body) - allowed
        if unknown:
            raise RequestError(422, "validation", f"unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
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
        manager = QueueManager([d for d in self.plan.devices if d in active], depths,
                               bool(body.get("offload", self.offload)))
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


# -- HTTP layer --------------------------------------------------------------------------------
def _error(exc: RequestError) -> web.Response:
    return web.json_response({"error": str(exc), "error_type": exc.error_type}, status=exc.status, headers=exc.headers)


async def _json_body(request: web.Request) -> dict:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError(400, "validation", "request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise RequestError(422, "validation", "request body must be a JSON object")
    return body


def _flag(body: dict, key: str, default: bool) -> bool:
    v = body.get(key, default)
    if not isinstance(v, bool):
        raise RequestError(422, "validation", f"`{key}` must be true or false")
    return v


def _busy(svc: "EmbeddingService") -> web.Response | None:
    """429 at once, before reading the body, when every queue is full (overload costs little)."""
    if not svc.manager.full():
        return None
    svc.metrics.rejected.inc()
    return _error(RequestError(429, "overloaded", "model is overloaded: every device queue is full",
                               headers={"Retry-After": "1"}))


async def handle_embed(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    if (busy := _busy(svc)) is not None:
        return busy
    try:
        body = await _json_body(request)
        if "inputs" not in body:
            raise RequestError(422, "validation", "missing field `inputs`")
        norm = _flag(body, "normalize", True)
        texts = svc.validate_texts(body["inputs"], _flag(body, "truncate", False), "inputs")
        vecs, headers = await svc.embed(texts)
    except RequestError as exc:
        svc.metrics.errors.labels(str(exc.status)).inc()
        return _error(exc)
    if norm:
        vecs = normalize(vecs)
    return web.Response(text=json.dumps(vecs.tolist()), content_type="application/json", headers=headers)


async def handle_openai(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    if (busy := _busy(svc)) is not None:
        return busy
    try:
        body = await _json_body(request)
        if "input" not in body:
            raise RequestError(422, "validation", "missing field `input`")
        fmt = body.get("encoding_format", "float")
        if fmt not in ("float", "base64"):
            raise RequestError(422, "validation", "`encoding_format` must be 'float' or 'base64'")
        texts = svc.validate_texts(body["input"], False, "input")
        vecs, headers = await svc.embed(texts)
    except RequestError as exc:
        svc.metrics.errors.labels(str(exc.status)).inc()
        return _error(exc)
    vecs = normalize(vecs).astype(np.float32)
    tokens = sum(svc.encoder.count_tokens(texts))
    data = [{"object": "embedding", "index": i,
             "embedding": base64.b64encode(v.tobytes()).decode() if fmt == "base64" else v.tolist()}
            for i, v in enumerate(vecs)]
    out = {"object": "list", "data": data, "model": body.get("model") or svc.encoder.path,
           "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    return web.json_response(out, headers=headers)


async def handle_health(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    if svc.healthy:
        return web.json_response({"status": "ok"})
    return web.json_response({"status": "unhealthy", "error_type": "unhealthy"}, status=503)


async def handle_metrics(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    return web.Response(body=svc.metrics.render(), headers={"Content-Type": "text/plain; version=0.0.4"})


async def handle_info(request: web.Request) -> web.Response:
    return web.json_response(request.app[SERVICE_KEY].info())


async def handle_admin(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    try:
        svc.reconfigure(await _json_body(request))
    except RequestError as exc:
        return _error(exc)
    return web.json_response(svc.info())


def make_app(svc: EmbeddingService) -> web.Application:
    """The aiohttp application; instances start with the app and stop with its cleanup."""
    app = web.Application(client_max_size=8 * 1024 * 1024)
    app[SERVICE_KEY] = svc

    async def lifecycle(app):
        await svc.start()
        yield
        await svc.stop()

    app.cleanup_ctx.append(lifecycle)
    app.router.add_post("/embed", handle_embed)
    app.router.add_post("/v1/embeddings", handle_openai)
    app.router.add_get("/health", handle_health)
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/info", handle_info)
    app.router.add_post("/admin/config", handle_admin)
    return app
