"""The OpenAPI description of the WindVE service's HTTP layer (Figure 3 B's service framework) and its docs
page, served as text-embeddings-inference (TEI) serves its own: the document at ``GET /openapi.json`` (and at
TEI's path ``GET /api-doc/openapi.json``), Swagger UI at ``GET /docs``.

Generated, never written by hand: each handler declares its operation with :func:`documented` (a summary, the
request model it validates its body with, its answer's model from :mod:`.tei_types`, the error statuses it
answers), and :func:`document` walks the app's router, so the document lists exactly the routes served and a
route without a declaration fails the app's construction. Schemas are the pydantic models' JSON Schemas
written as OpenAPI 3.0.3 (TEI's version, and the one the bundled Swagger UI 4 reads: ``nullable`` for an
optional value, one ``example``), assembled into the document by apispec. The docs page is Swagger UI (TEI's
docs page too) from the ``swagger-ui-bundle`` package, served by the service itself: no CDN, so it works
offline; its online validator badge is off.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from . import tei_types as T

OPENAPI_VERSION = "3.0.3"
TEI = "Text Embeddings Inference"
JSON = "application/json"
ERRORS = {   # TEI's descriptions of its error statuses, with what brings each here
    400: "Batch is empty (an empty input, text or list of ids)",
    409: "Busy: a request is in flight",
    413: "Batch size error (a batch over max_client_batch_size, or a text over the model's max tokens)",
    422: "Validation or tokenizer error (a body of the wrong shape, a value out of range)",
    424: "Inference failed",
    429: "Model is overloaded (every queue full, or no device predicted within the SLO); see Retry-After",
    503: "Not ready: warming up, the warm-up failed, or an instance stopped",
}
EMBED_HEADERS = {   # what every embedding answer carries
    "x-device": "the device instance that computed the batch", "x-source": "measured or emulated",
    "x-queue-time": "ms in the device's queue", "x-inference-time": "ms of the batch's inference",
    "x-batch-size": "the batch this request ran in", "x-total-time": "ms in the service",
}


@dataclasses.dataclass(frozen=True)
class Doc:
    """One operation: what a handler serves, declared beside it."""

    name: str                                  # operationId of its first route (later routes add their path)
    summary: str
    tag: str = TEI
    request: type[BaseModel] | None = None     # the JSON body, validated with this model
    ok: type[BaseModel] | None = None          # the 200 body's model; None: ``media``, free form
    media: str = JSON
    errors: tuple[int, ...] = ()
    error_model: type[BaseModel] = T.ErrorResponse
    special: tuple[tuple[int, type[BaseModel]], ...] = ()   # statuses answered with another model
    params: tuple[dict, ...] = ()
    headers: tuple[str, ...] = ()              # keys of EMBED_HEADERS on the 200 answer
    description: str | None = None


def documented(doc: Doc):
    """Declare a handler's operation (read by :func:`document`)."""
    def mark(handler):
        handler.openapi = doc
        return handler
    return mark


def served(app: web.Application) -> list[tuple[str, str, Any]]:
    """Every (method, path, handler) of the app's router (aiohttp's automatic HEAD of a GET left out)."""
    return [(r.method, r.resource.canonical, r.handler) for r in app.router.routes() if r.method != "HEAD"]


def _doc_of(method: str, path: str, handler) -> Doc:
    doc = getattr(handler, "openapi", None)
    if not isinstance(doc, Doc):
        raise TypeError(f"route {method} {path} ({getattr(handler, '__name__', handler)}) has no OpenAPI "
                        "declaration: decorate its handler with openapi.documented(Doc(...))")
    return doc


def _models(docs: list[Doc]) -> list[tuple[type[BaseModel], str]]:
    pairs = {(d.request, "validation") for d in docs if d.request}
    pairs |= {(m, "serialization") for d in docs for m in (d.ok, d.error_model, *(m for _, m in d.special)) if m}
    return sorted(pairs, key=lambda p: (p[0].__name__, p[1]))


def oas30(node: Any) -> Any:
    """A pydantic JSON Schema (2020-12) as an OpenAPI 3.0 schema: ``anyOf [X, null]`` -> X ``nullable``,
    ``const`` -> a one-value ``enum``, ``examples`` -> ``example``."""
    if isinstance(node, list):
        return [oas30(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: oas30(v) for k, v in node.items()}
    alts = out.get("anyOf")
    if alts and {"type": "null"} in alts:
        rest = [a for a in alts if a != {"type": "null"}]
        del out["anyOf"]
        one = rest[0] if len(rest) == 1 else {"anyOf": rest}
        out.update({"allOf": [one]} if "$ref" in one else one, nullable=True)
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if "examples" in out:
        out["example"] = out.pop("examples")[0]
    return out


def _content(schema: dict, media: str = JSON) -> dict:
    return {media: {"schema": schema}}


def _responses(doc: Doc, ref) -> dict:
    ok = {"description": "OK", "content": _content(ref(doc.ok) if doc.ok else {}, doc.media)}
    if doc.headers:
        ok["headers"] = {h: {"description": EMBED_HEADERS[h], "schema": {"type": "string"}} for h in doc.headers}
    out = {"200": ok}
    special = dict(doc.special)
    for status in doc.errors:
        out[str(status)] = {"description": ERRORS[status],
                            "content": _content(ref(special.get(status, doc.error_model)))}
    return out


def _operation(doc: Doc, op_id: str, ref) -> dict:
    op = {"operationId": op_id, "summary": doc.summary, "tags": [doc.tag], "responses": _responses(doc, ref)}
    if doc.description:
        op["description"] = doc.description
    if doc.request is not None:
        op["requestBody"] = {"required": True, "content": _content(ref(doc.request, "validation"))}
    if doc.params:
        op["parameters"] = [dict(p) for p in doc.params]
    return op


def _slug(path: str) -> str:
    return "_".join(p.strip("{}") for p in path.strip("/").split("/") if p) or "root"


def document(app: web.Application, version: str, title: str = "WindVE embedding service") -> dict:
    """The OpenAPI document of every route ``app`` serves, from the handlers' declarations."""
    from apispec import APISpec

    routes = served(app)
    docs = [_doc_of(*r) for r in routes]
    keymap, schemas = models_json_schema(_models(docs), ref_template="#/components/schemas/{model}")

    def ref(model: type[BaseModel], mode: str = "serialization") -> dict:
        return keymap[(model, mode)]

    spec = APISpec(title=title, version=version, openapi_version=OPENAPI_VERSION, info={"description": (
        "text-embeddings-inference's embedding API (its routes, field names and error bodies) served by the "
        "WindVE service: device instances behind the paper's queue manager (Algorithm 1)")})
    for name, schema in schemas.get("$defs", {}).items():
        spec.components.schema(name, oas30(schema))
    names: set[str] = set()
    for (method, path, _), doc in zip(routes, docs):
        op_id = doc.name if doc.name not in names else f"{doc.name}_{_slug(path)}"
        names.add(op_id)
        spec.path(path=path, operations={method.lower(): _operation(doc, op_id, ref)})
    return spec.to_dict()


# -- serving the document and the docs page -----------------------------------------------------------
DOC_KEY = web.AppKey("windve_openapi", dict)
ASSETS = {"swagger-ui.css": "text/css", "swagger-ui-bundle.js": "application/javascript",
          "favicon-32x32.png": "image/png"}
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>WindVE embedding service: API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  validatorUrl: null, presets: [SwaggerUIBundle.presets.apis], layout: "BaseLayout"});</script>
</body></html>
"""
_SPEC = Doc("openapi", "The OpenAPI 3 description of every route", tag="Documentation")


@documented(_SPEC)
async def handle_openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app[DOC_KEY])


@documented(Doc("docs", "The docs page (Swagger UI, served here: works offline)", tag="Documentation",
                media="text/html"))
async def handle_docs(request: web.Request) -> web.Response:
    return web.Response(text=PAGE, content_type="text/html")


@documented(Doc("docs_asset", "A file of the docs page (Swagger UI's script, style sheet, icon)",
                tag="Documentation", media="application/octet-stream",
                params=({"name": "asset", "in": "path", "required": True,
                         "schema": {"type": "string", "enum": sorted(ASSETS)}},)))
async def handle_asset(request: web.Request) -> web.StreamResponse:
    import swagger_ui_bundle

    name = request.match_info["asset"]
    if name not in ASSETS:
        raise web.HTTPNotFound(text=f"no docs file {name!r}; there are {sorted(ASSETS)}")
    return web.FileResponse(swagger_ui_bundle.swagger_ui_path / name, headers={"Content-Type": ASSETS[name]})


def install(app: web.Application, version: str) -> None:
    """Add the document's and the docs page's routes, then build the document from every route of ``app``:
    call it after the other routes are added."""
    app.router.add_get("/openapi.json", handle_openapi)
    app.router.add_get("/api-doc/openapi.json", handle_openapi)   # TEI's path
    app.router.add_get("/docs", handle_docs)
    app.router.add_get("/docs/{asset}", handle_asset)
    app[DOC_KEY] = document(app, version)
