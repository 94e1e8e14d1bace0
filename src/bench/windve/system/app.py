"""The WindVE service's HTTP layer (Figure 3 B's service framework) as an aiohttp app on 127.0.0.1.

aiohttp, because one well-kept asyncio library gives both the server and the load generator's client
(no ASGI server process model to configure, no second HTTP stack in the measurements).

Routes and shapes as text-embeddings-inference (TEI) answers them for an embedding model (its router's
``http/server.rs`` and ``http/types.rs``), so TEI's clients work unchanged (``huggingface_hub``'s
``InferenceClient(url).feature_extraction``, LangChain's ``HuggingFaceEndpointEmbeddings``, OpenAI's client):

- ``POST /`` (TEI's default route: ``/embed`` for an embedding model) and ``POST /embed``:
  ``{"inputs": str | [str], "normalize": true, "truncate": false, "dimensions": null}`` -> ``[[float]]``;
- ``POST /v1/embeddings`` (and TEI's alias ``/embeddings``): OpenAI's shape (``input``, ``model``,
  ``encoding_format`` ``float`` or ``base64``: little-endian float32 bytes, base64; ``dimensions``) ->
  ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}`` with
  ``model`` the served model name (TEI's: the model's hub id unless the service was given a name);
- ``dimensions`` (both embedding routes, as TEI): the first n dimensions, then normalised, for a model trained
  for truncation (Matryoshka); the model's own width is always accepted; any other value is refused with 422
  for a model not so trained, naming the model and its width (vLLM's refusal), never ignored
  (:meth:`.service.EmbeddingService.dimensions`);
- ``POST /tokenize``: ``{"inputs", "add_special_tokens": true}`` -> ``[[{"id", "text", "special", "start",
  "stop"}]]``; ``POST /decode``, its inverse: ``{"ids": [int] | [[int]], "skip_special_tokens": true}`` ->
  ``[str]``;
- ``GET /openapi.json`` (and TEI's ``/api-doc/openapi.json``): the OpenAPI 3 document of every route, built
  from the handlers' declarations (:mod:`.openapi`, schemas from :mod:`.tei_types`); ``GET /docs``: its
  Swagger UI page, served from the service (offline);
- ``GET /health`` (and ``GET /``): 200 once every instance is warm (TEI answers only after its warm-up) and
  running; 503 before (``{"error", "error_type": "unhealthy", "status": "warming"}``), or when an instance
  stopped or the warm-up failed;
- ``GET /metrics``: Prometheus text (:mod:`.prometheus`, TEI's names);
- ``GET /info``: TEI's ``Info`` fields (``model_id``, ``model_type``, ``max_concurrent_requests``, ...), the
  service's own configuration beside them under ``windve``
  (:meth:`.service.EmbeddingService.tei_info`);
- ``POST /admin/config``: the benchmark control (:meth:`.service.EmbeddingService.reconfigure`; bound to
  127.0.0.1 only), answering the ``windve`` configuration; after a change the instances warm any new batch
  size before the answer;
- ``GET /admin/decisions``: every request's Algorithm 1 decision time so far (``dispatch_us`` wall,
  ``dispatch_cpu_us`` the thread's CPU time; the paper's
  < 0.1 ms per request, recorded per request rather than read from a shared last value).

Errors in TEI's JSON shape ``{"error": message, "error_type": type}`` (OpenAI's route: TEI's ``{"message",
"code", "type"}``) with TEI's status codes: 413 ``validation`` (a batch over ``max_client_batch_size``, a text
beyond the model's max tokens without ``truncate``), 400 ``empty`` (empty input or text), 424 ``backend`` (the
inference failed), 429 ``overloaded`` with ``Retry-After`` when the queue manager says BUSY (TEI refuses
overload at once: the client may retry elsewhere or later, and no request waits unbounded; ``x-refused-by``
says ``depth`` or ``deadline``), 503 ``unhealthy`` while not ready. A body that is not JSON is 400 and one of
the wrong shape (a missing field, a number for a text, a flag that is not a boolean) 422, as TEI's JSON
extractor answers them (the shapes are :mod:`.tei_types`' models). ``error_type`` is lower case as TEI's API
documentation writes it. Each answer carries ``x-device``, ``x-source`` (measured/emulated), queue, inference
and dispatch times (ms), ``x-total-time`` (ms, in the service) and with deadline admission the predicted time.
"""
from __future__ import annotations

import base64
import json
import time

import numpy as np
from aiohttp import web
from pydantic import ValidationError

from . import openapi
from . import tei_types as T
from .encoder import normalize
from .openapi import Doc, documented
from .service import EmbeddingService, RequestError

SERVICE_KEY = web.AppKey("windve_service", EmbeddingService)
EMBED_ERRORS = (400, 413, 422, 424, 429, 503)   # TEI's statuses of an embedding route
EMBED_HEADERS = ("x-device", "x-source", "x-queue-time", "x-inference-time", "x-batch-size", "x-total-time")


def _error(exc: RequestError, openai: bool = False) -> web.Response:
    """TEI's error body; on the OpenAI route TEI's OpenAI-compatible one (``message``, ``code``, ``type``)."""
    body = ({"message": str(exc), "code": exc.status, "type": exc.error_type} if openai else
            {"error": str(exc), "error_type": exc.error_type})
    return web.json_response(body, status=exc.status, headers=exc.headers)


async def _json_body(request: web.Request) -> dict:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError(400, "validation", "request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise RequestError(422, "validation", "request body must be a JSON object")
    return body


def _parse(model, body: dict):
    """``body`` as the request ``model`` declares it (:mod:`.tei_types`); 422 ``validation`` otherwise."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise RequestError(422, "validation", T.describe(exc)) from None


def _gate(svc: EmbeddingService, arrival: float) -> None:
    """Refuse before reading the body: 503 until ready; 429 at once when no device could take even one
    query, by depth or by deadline (overload costs little, and a burst's refusals leave the event loop to
    the accepted requests)."""
    if not svc.healthy:
        raise RequestError(503, "unhealthy", svc.warm_error or "model is warming up; retry when /health says ok",
                           headers={"Retry-After": "1"})
    if svc.manager.full():
        raise svc.busy("depth")
    if svc.manager.slo_s is not None and (reason := svc.manager.refusal(1, arrival)):
        raise svc.busy(reason)


async def _serve(request: web.Request, method: str, answer) -> web.Response:
    """Count the request once (TEI's request_count, then success or failure) around ``answer``."""
    arrival = time.perf_counter()
    svc: EmbeddingService = request.app[SERVICE_KEY]
    svc.metrics.request(method)
    try:
        _gate(svc, arrival)
        resp = await answer(svc, await _json_body(request), arrival)
    except RequestError as exc:
        svc.metrics.failed(exc.status)
        return _error(exc, openai=method == "openai")
    except Exception:
        svc.metrics.failed(500)
        raise
    svc.metrics.success.labels(method).inc()
    resp.headers["x-total-time"] = f"{(time.perf_counter() - arrival) * 1e3:.3f}"
    return resp


def _vectors(vecs: np.ndarray, width: int | None, norm: bool) -> np.ndarray:
    """The first ``width`` dimensions (all with None), then L2-normalised when ``norm`` (Matryoshka's order)."""
    if width is not None:
        vecs = vecs[:, :width]
    return normalize(vecs) if norm else vecs


async def _embed(svc: EmbeddingService, body: dict, arrival: float) -> web.Response:
    req = _parse(T.EmbedRequest, body)
    width = svc.dimensions(req.dimensions)
    texts = svc.validate_texts(req.inputs, "inputs")
    e = await svc.embed(texts, arrival, req.truncate)
    vecs = _vectors(e.vectors, width, req.normalize)
    resp = web.Response(text=json.dumps(vecs.tolist()), content_type="application/json", headers=e.headers)
    svc.answered(e)
    return resp


async def _openai(svc: EmbeddingService, body: dict, arrival: float) -> web.Response:
    req = _parse(T.OpenAICompatRequest, body)
    width = svc.dimensions(req.dimensions)
    texts = svc.validate_texts(req.input, "input")
    e = await svc.embed(texts, arrival, truncate=False)
    vecs = _vectors(e.vectors, width, True).astype("<f4")   # base64: little-endian float32, as OpenAI
    tokens = sum(svc.encoder.count_tokens(texts))
    b64 = req.encoding_format == "base64"
    data = [{"object": "embedding", "index": i,
             "embedding": base64.b64encode(v.tobytes()).decode() if b64 else v.tolist()}
            for i, v in enumerate(vecs)]
    out = {"object": "list", "data": data, "model": svc.model_name,
           "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    resp = web.json_response(out, headers=e.headers)
    svc.answered(e)
    return resp


@documented(Doc("embed", "Get embeddings", request=T.EmbedRequest, ok=T.EmbedResponse, errors=EMBED_ERRORS,
                headers=EMBED_HEADERS))
async def handle_embed(request: web.Request) -> web.Response:
    return await _serve(request, "embed", _embed)


@documented(Doc("openai_embed", "OpenAI compatible route", request=T.OpenAICompatRequest,
                ok=T.OpenAICompatResponse, errors=EMBED_ERRORS, error_model=T.OpenAICompatErrorResponse,
                headers=EMBED_HEADERS))
async def handle_openai(request: web.Request) -> web.Response:
    return await _serve(request, "openai", _openai)


@documented(Doc("health", "Health check: 200 once every instance is warm and running", ok=T.HealthResponse,
                errors=(503,), special=((503, T.UnhealthyResponse),)))
async def handle_health(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    if svc.healthy:
        return web.json_response({"status": "ok"})
    if svc.warm_error:
        return web.json_response({"status": "failed", "error": svc.warm_error, "error_type": "unhealthy"}, status=503)
    status = "warming" if not svc.ready else "unhealthy"
    return web.json_response({"status": status, "error": "unhealthy", "error_type": "unhealthy"}, status=503)


@documented(Doc("tokenize", "Tokenize inputs", request=T.TokenizeRequest, ok=T.TokenizeResponse,
                errors=(400, 413, 422)))
async def handle_tokenize(request: web.Request) -> web.Response:
    """TEI's ``/tokenize`` (the tokenizer only: no admission, no request counted)."""
    svc: EmbeddingService = request.app[SERVICE_KEY]
    try:
        req = _parse(T.TokenizeRequest, await _json_body(request))
        texts = svc.validate_texts(req.inputs, "inputs")
    except RequestError as exc:
        return _error(exc)
    return web.json_response(svc.tokenize(texts, req.add_special_tokens))


@documented(Doc("decode", "Decode input ids", request=T.DecodeRequest, ok=T.DecodeResponse,
                errors=(400, 413, 422)))
async def handle_decode(request: web.Request) -> web.Response:
    """TEI's ``/decode``, the inverse of ``/tokenize`` (the tokenizer only, as it)."""
    svc: EmbeddingService = request.app[SERVICE_KEY]
    try:
        req = _parse(T.DecodeRequest, await _json_body(request))
        texts = svc.decode(req.ids, req.skip_special_tokens)
    except RequestError as exc:
        return _error(exc)
    return web.json_response(texts)


@documented(Doc("metrics", "Prometheus metrics (TEI's names, windve_ prefix)", media="text/plain"))
async def handle_metrics(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    return web.Response(body=svc.metrics.render(), headers={"Content-Type": "text/plain; version=0.0.4"})


@documented(Doc("get_model_info", "Text Embeddings Inference endpoint info", ok=T.Info))
async def handle_info(request: web.Request) -> web.Response:
    return web.json_response(request.app[SERVICE_KEY].tei_info())


@documented(Doc("admin_config", "Change the service's configuration while idle (the benchmark control)",
                tag="WindVE benchmark control", request=T.AdminConfig, errors=(409, 422),
                description="Absent or null: unchanged (`slo_s: null` turns deadline admission off). Answers "
                            "the configuration (as /info's `windve`) once any new batch size is warm."))
async def handle_admin(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    try:
        req = _parse(T.AdminConfig, await _json_body(request))
        svc.reconfigure({k: v for k, v in req.model_dump(exclude_unset=True).items()
                         if v is not None or k == "slo_s"})
    except RequestError as exc:
        return _error(exc)
    await svc.warm()   # new batch sizes or CPU cores: warm them before the caller measures
    return web.json_response(svc.info())


@documented(Doc("admin_decisions", "Every request's Algorithm 1 decision time so far",
                tag="WindVE benchmark control", ok=T.Decisions,
                params=({"name": "clear", "in": "query", "required": False, "schema": {"type": "string", "enum": ["1"]},
                         "description": "1: start a new record after this answer"},)))
async def handle_decisions(request: web.Request) -> web.Response:
    """Every request's Algorithm 1 decision time so far (``dispatch_us``: wall, ``dispatch_cpu_us``: the
    thread's CPU time; microseconds); ``?clear=1`` starts a new record (read between measurements)."""
    svc: EmbeddingService = request.app[SERVICE_KEY]
    return web.json_response(svc.decisions(clear=request.query.get("clear") == "1"))


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("bench")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def make_app(svc: EmbeddingService) -> web.Application:
    """The aiohttp application; instances start with the app (warming in the background while /health
    says 503) and stop with its cleanup. Its OpenAPI document is built last, from every route's handler."""
    app = web.Application(client_max_size=8 * 1024 * 1024)
    app[SERVICE_KEY] = svc

    async def lifecycle(app):
        await svc.start()
        svc.start_warmup()
        yield
        await svc.stop()

    app.cleanup_ctx.append(lifecycle)
    app.router.add_post("/embed", handle_embed)
    app.router.add_post("/", handle_embed)           # TEI's default route of an embedding model
    app.router.add_post("/v1/embeddings", handle_openai)
    app.router.add_post("/embeddings", handle_openai)
    app.router.add_post("/tokenize", handle_tokenize)
    app.router.add_post("/decode", handle_decode)
    app.router.add_get("/health", handle_health)
    app.router.add_get("/", handle_health)            # TEI's health on GET /
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/info", handle_info)
    app.router.add_post("/admin/config", handle_admin)
    app.router.add_get("/admin/decisions", handle_decisions)
    openapi.install(app, _version())
    return app
