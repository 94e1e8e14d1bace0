"""The WindVE service's HTTP layer (Figure 3 B's service framework) as an aiohttp app on 127.0.0.1.

aiohttp, because one well-kept asyncio library gives both the server and the load generator's client
(no ASGI server process model to configure, no second HTTP stack in the measurements).

Routes and shapes as text-embeddings-inference (TEI) answers them for an embedding model (its router's
``http/server.rs`` and ``http/types.rs``), so TEI's clients work unchanged (``huggingface_hub``'s
``InferenceClient(url).feature_extraction``, LangChain's ``HuggingFaceEndpointEmbeddings``, OpenAI's client):

- ``POST /`` (TEI's default route: ``/embed`` for an embedding model) and ``POST /embed``:
  ``{"inputs": str | [str], "normalize": true, "truncate": false}`` -> ``[[float]]``;
- ``POST /v1/embeddings`` (and TEI's alias ``/embeddings``): OpenAI's shape (``input``, ``model``,
  ``encoding_format`` ``float`` or ``base64``: little-endian float32 bytes, base64) -> ``{"object": "list",
  "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}``;
- ``POST /tokenize``: ``{"inputs", "add_special_tokens": true}`` -> ``[[{"id", "text", "special", "start",
  "stop"}]]``;
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

Errors in TEI's JSON shape ``{"error": message, "error_type": type}`` (OpenAI's route: TEI's
``{"message", "code", "type"}``) with TEI's status codes: 413 ``validation`` (a batch over
``max_client_batch_size``, a text beyond the model's max tokens without ``truncate``), 400 ``empty`` (empty
input or text), 424 ``backend`` (the inference failed), 429 ``overloaded`` with ``Retry-After`` when the queue
manager says BUSY (TEI refuses overload at once: the client may retry elsewhere or later, and no request
waits unbounded; ``x-refused-by`` says ``depth`` or ``deadline``), 503 ``unhealthy`` while not ready. A body
that is not JSON is 400 and one of the wrong shape (a missing field, a number for a text, a flag that is not
a boolean) 422, as TEI's JSON extractor answers them. ``error_type`` is lower case as TEI's API documentation
writes it. Each answer carries ``x-device``, ``x-source`` (measured/emulated), queue, inference and dispatch
times (ms), ``x-total-time`` (ms, in the service) and with deadline admission the predicted time.
"""
from __future__ import annotations

import base64
import json
import time

import numpy as np
from aiohttp import web

from .encoder import normalize
from .service import EmbeddingService, RequestError

SERVICE_KEY = web.AppKey("windve_service", EmbeddingService)


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


def _flag(body: dict, key: str, default: bool) -> bool:
    v = body.get(key, default)
    if not isinstance(v, bool):
        raise RequestError(422, "validation", f"`{key}` must be true or false")
    return v


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


async def _embed(svc: EmbeddingService, body: dict, arrival: float) -> web.Response:
    if "inputs" not in body:
        raise RequestError(422, "validation", "missing field `inputs`")
    norm = _flag(body, "normalize", True)
    truncate = _flag(body, "truncate", False)
    texts = svc.validate_texts(body["inputs"], "inputs")
    e = await svc.embed(texts, arrival, truncate)
    vecs = normalize(e.vectors) if norm else e.vectors
    resp = web.Response(text=json.dumps(vecs.tolist()), content_type="application/json", headers=e.headers)
    svc.answered(e)
    return resp


async def _openai(svc: EmbeddingService, body: dict, arrival: float) -> web.Response:
    if "input" not in body:
        raise RequestError(422, "validation", "missing field `input`")
    fmt = body.get("encoding_format", "float")
    if fmt not in ("float", "base64"):
        raise RequestError(422, "validation", "`encoding_format` must be 'float' or 'base64'")
    texts = svc.validate_texts(body["input"], "input")
    e = await svc.embed(texts, arrival, truncate=False)
    vecs = normalize(e.vectors).astype("<f4")   # base64: little-endian float32, as OpenAI
    tokens = sum(svc.encoder.count_tokens(texts))
    data = [{"object": "embedding", "index": i,
             "embedding": base64.b64encode(v.tobytes()).decode() if fmt == "base64" else v.tolist()}
            for i, v in enumerate(vecs)]
    out = {"object": "list", "data": data, "model": body.get("model") or svc.encoder.path,
           "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    resp = web.json_response(out, headers=e.headers)
    svc.answered(e)
    return resp


async def handle_embed(request: web.Request) -> web.Response:
    return await _serve(request, "embed", _embed)


async def handle_openai(request: web.Request) -> web.Response:
    return await _serve(request, "openai", _openai)


async def handle_health(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    if svc.healthy:
        return web.json_response({"status": "ok"})
    if svc.warm_error:
        return web.json_response({"status": "failed", "error": svc.warm_error, "error_type": "unhealthy"}, status=503)
    status = "warming" if not svc.ready else "unhealthy"
    return web.json_response({"status": status, "error": "unhealthy", "error_type": "unhealthy"}, status=503)


async def handle_tokenize(request: web.Request) -> web.Response:
    """TEI's ``/tokenize`` (the tokenizer only: no admission, no request counted)."""
    svc: EmbeddingService = request.app[SERVICE_KEY]
    try:
        body = await _json_body(request)
        if "inputs" not in body:
            raise RequestError(422, "validation", "missing field `inputs`")
        special = _flag(body, "add_special_tokens", True)
        texts = svc.validate_texts(body["inputs"], "inputs")
    except RequestError as exc:
        return _error(exc)
    return web.json_response(svc.tokenize(texts, special))


async def handle_metrics(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    return web.Response(body=svc.metrics.render(), headers={"Content-Type": "text/plain; version=0.0.4"})


async def handle_info(request: web.Request) -> web.Response:
    return web.json_response(request.app[SERVICE_KEY].tei_info())


async def handle_admin(request: web.Request) -> web.Response:
    svc: EmbeddingService = request.app[SERVICE_KEY]
    try:
        svc.reconfigure(await _json_body(request))
    except RequestError as exc:
        return _error(exc)
    await svc.warm()   # new batch sizes or CPU cores: warm them before the caller measures
    return web.json_response(svc.info())


async def handle_decisions(request: web.Request) -> web.Response:
    """Every request's Algorithm 1 decision time so far (``dispatch_us``: wall, ``dispatch_cpu_us``: the
    thread's CPU time; microseconds); ``?clear=1`` starts a new record (read between measurements)."""
    svc: EmbeddingService = request.app[SERVICE_KEY]
    return web.json_response(svc.decisions(clear=request.query.get("clear") == "1"))


def make_app(svc: EmbeddingService) -> web.Application:
    """The aiohttp application; instances start with the app (warming in the background while /health
    says 503) and stop with its cleanup."""
    app = web.Application(client_max_size=8 * 1024 * 1024)
    app[SERVICE_KEY] = svc

    async def lifecycle(app):
        await svc.start()
        svc.start_warmup()
        yield
        await svc.stop()

    app.cleanup_ctx.append(lifecycle)
    app.router.add_post("/", handle_embed)           # TEI's default route of an embedding model
    app.router.add_post("/embed", handle_embed)
    app.router.add_post("/v1/embeddings", handle_openai)
    app.router.add_post("/embeddings", handle_openai)
    app.router.add_post("/tokenize", handle_tokenize)
    app.router.add_get("/", handle_health)            # TEI's health on GET /
    app.router.add_get("/health", handle_health)
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/info", handle_info)
    app.router.add_post("/admin/config", handle_admin)
    app.router.add_get("/admin/decisions", handle_decisions)
    return app
