"""The WindVE service as a text-embeddings-inference user reaches for it, on 127.0.0.1: the OpenAPI document
validates and lists exactly the routes the app serves (a route without a declaration fails), the answers
match the document's schemas, the docs page loads with nothing from outside, ``/tokenize`` -> ``/decode``
round-trips and bad ids get TEI's error body, ``dimensions`` is refused for MiniLM (not trained for
truncation) and honoured for a stand-in model declared Matryoshka-trained, and ``/info`` names MiniLM by
its hub id. Two services, each started once for the module and always stopped."""
from __future__ import annotations

import base64
import contextlib
import json
import re
import urllib.error
import urllib.request

import numpy as np
import pytest

from .conftest import TEST_LAW, cosine, wait_ready

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = ["what is the capital of france?", "vector embeddings, for retrieval augmented generation!"]


def _call(url: str, path: str, payload=None, data: bytes | None = None):
    """(status, headers, body) of a GET (no payload) or a JSON POST; errors are answers, not exceptions."""
    body = data if data is not None else (None if payload is None else json.dumps(payload).encode())
    req = urllib.request.Request(url + path, data=body, method="GET" if body is None else "POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _json(url, path, payload=None):
    status, _, body = _call(url, path, payload)
    return status, json.loads(body)


@contextlib.contextmanager
def _serving(encoder, **cfg):
    from bench.windve.system.app import make_app
    from bench.windve.system.service import EmbeddingService
    from bench.windve.system.service_config import ServiceConfig

    from ..aioserve import serve_app

    svc = EmbeddingService(ServiceConfig(emulate="v100-xeon", emulated_alpha=TEST_LAW["alpha"],
                                         emulated_beta=TEST_LAW["beta"], **cfg), encoder=encoder)
    app = make_app(svc)
    with serve_app(app) as url:
        wait_ready(url)
        yield url, svc, app


@pytest.fixture(scope="module")
def minilm(encoder):
    """MiniLM (not trained for truncation) served once for the module: (url, service, app)."""
    with _serving(encoder, max_client_batch_size=4) as served:
        yield served


@pytest.fixture(scope="module")
def matryoshka(tmp_path_factory):
    """A stand-in model declared Matryoshka-trained (``is_matryoshka`` in its config.json, as vLLM reads it):
    a 1-layer, 32-wide BERT with random weights from a fixed seed and MiniLM's tokenizer, served once."""
    import torch
    from transformers import BertConfig, BertModel

    from bench.windve.system.encoder import Encoder, load_tokenizer

    folder = tmp_path_factory.mktemp("matryoshka-bert")
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=512, is_matryoshka=True)
    BertModel(cfg).save_pretrained(folder)
    load_tokenizer().save_pretrained(folder)
    with _serving(Encoder(folder)) as served:
        yield served


def _schema_validator(doc: dict, name: str):
    """A validator of the document's component ``name`` (its references resolved inside the document)."""
    from openapi_schema_validator import OAS30Validator

    return OAS30Validator({"$ref": f"#/components/schemas/{name}", "components": doc["components"]})


def test_openapi_document_validates_and_lists_every_route_the_app_serves(minilm):
    from openapi_spec_validator import validate

    from bench.windve.system import openapi
    from bench.windve.system.service import RECONFIGURABLE

    url, _, app = minilm
    status, doc = _json(url, "/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    validate(doc)
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    routed = {(m, p) for m, p, _ in openapi.served(app)}
    assert documented == routed
    assert {("POST", p) for p in ("/embed", "/v1/embeddings", "/tokenize", "/decode")} <= documented
    assert _json(url, "/api-doc/openapi.json") == (200, doc)   # TEI's path too
    body = doc["components"]["schemas"]
    assert {"inputs", "truncate", "normalize", "dimensions"} <= set(body["EmbedRequest"]["properties"])
    assert {"input", "model", "encoding_format", "dimensions"} <= set(body["OpenAICompatRequest"]["properties"])
    assert set(body["DecodeRequest"]["properties"]) == {"ids", "skip_special_tokens"}
    assert set(body["ErrorResponse"]["required"]) == {"error", "error_type"}
    assert set(body["AdminConfig"]["properties"]) == set(RECONFIGURABLE)   # the control documents what it takes


def test_a_route_without_a_declaration_fails_the_document():
    from aiohttp import web

    from bench.windve.system import openapi

    async def undocumented(request):   # pragma: no cover - never served
        return web.Response()

    app = web.Application()
    app.router.add_post("/embed", undocumented)
    with pytest.raises(TypeError, match="POST /embed .*no OpenAPI declaration"):
        openapi.document(app, "0")


def test_answers_match_their_documented_schemas(minilm):
    url, _, _ = minilm
    doc = _json(url, "/openapi.json")[1]
    cases = [("/embed", {"inputs": TEXTS}, 200, "EmbedResponse"),
             ("/v1/embeddings", {"input": TEXTS[0]}, 200, "OpenAICompatResponse"),
             ("/v1/embeddings", {"input": TEXTS, "encoding_format": "base64"}, 200, "OpenAICompatResponse"),
             ("/tokenize", {"inputs": TEXTS}, 200, "TokenizeResponse"),
             ("/decode", {"ids": [101, 7592, 102]}, 200, "DecodeResponse"),
             ("/info", None, 200, "Info"), ("/health", None, 200, "HealthResponse"),
             ("/admin/decisions", None, 200, "Decisions"),
             ("/embed", {"inputs": []}, 400, "ErrorResponse"),
             ("/decode", {"ids": [99999]}, 422, "ErrorResponse"),
             ("/v1/embeddings", {"input": 3}, 422, "OpenAICompatErrorResponse")]
    for path, payload, want, name in cases:
        status, body = _json(url, path, payload)
        assert status == want, (path, body)
        _schema_validator(doc, name).validate(body)
        ops = doc["paths"][path]["post" if payload is not None else "get"]["responses"]
        assert ops[str(status)]["content"]["application/json"]["schema"]["$ref"].endswith("/" + name)


def test_docs_page_loads_with_nothing_from_outside(minilm):
    url, _, _ = minilm
    status, headers, page = _call(url, "/docs")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    page = page.decode()
    assert "http://" not in page and "https://" not in page and "validatorUrl: null" in page
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert len(assets) == 3 and all(a.startswith("/docs/") for a in assets)
    for a in assets:
        status, _, body = _call(url, a)
        assert status == 200 and len(body) > 500, a
    assert _call(url, "/docs/index.html")[0] == 404   # only the page's own files are served


def test_tokenize_then_decode_round_trips(minilm, encoder):
    url, _, _ = minilm
    status, toks = _json(url, "/tokenize", {"inputs": TEXTS})
    assert status == 200
    ids = [[t["id"] for t in row] for row in toks]
    assert _json(url, "/decode", {"ids": ids}) == (200, TEXTS)                  # batch
    assert _json(url, "/decode", {"ids": ids[0]}) == (200, TEXTS[:1])           # one text
    kept = _json(url, "/decode", {"ids": ids[0], "skip_special_tokens": False})[1][0]
    assert kept == f"[CLS] {TEXTS[0]} [SEP]"
    assert ids[0] == encoder.tokenizer(TEXTS[0])["input_ids"]


def test_bad_ids_get_teis_error_body(minilm):
    url, _, _ = minilm
    cases = [({"ids": [101, -1]}, 422, "validation", "`ids[1]` must be a token id"),
             ({"ids": [[101], [7592, "x"]]}, 422, "validation", "`ids[1][1]` must be a token id"),
             ({"ids": [101, [7592]]}, 422, "validation", "list of lists"),
             ({"ids": "101"}, 422, "validation", "list of token ids"),
             ({"ids": [1.5]}, 422, "validation", "token id"),
             ({"ids": [101, 99999]}, 422, "tokenizer", "outside the tokenizer's vocabulary (ids 0 to 30521)"),
             ({"ids": []}, 400, "empty", "`ids` cannot be empty"),
             ({"ids": [[101], []]}, 400, "empty", "`ids[1]` cannot be empty"),
             ({"ids": [[101]] * 5}, 413, "validation", "maximum allowed batch size 4"),
             ({"ids": [101], "skip_special_tokens": "no"}, 422, "validation", "skip_special_tokens"),
             ({"text": [101]}, 422, "validation", "missing field `ids`")]
    for payload, status, kind, words in cases:
        got, err = _json(url, "/decode", payload)
        assert got == status and err["error_type"] == kind and words in err["error"], (payload, err)
    status, _, body = _call(url, "/decode", data=b"{not json")
    assert status == 400 and json.loads(body)["error_type"] == "validation"


def test_dimensions_is_refused_for_minilm_naming_the_model_and_its_width(minilm):
    import openai

    url, svc, _ = minilm
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=60)
    with pytest.raises(openai.UnprocessableEntityError) as exc:
        client.embeddings.create(model="minilm", input=TEXTS[0], dimensions=16)
    err = exc.value.body if isinstance(exc.value.body, dict) else json.loads(exc.value.response.text)
    assert exc.value.status_code == 422 and err["type"] == "validation" and err["code"] == 422
    assert f'Model "{MINILM}" does not support matryoshka representation' in err["message"] and "384" in err["message"]
    full = client.embeddings.create(model=MINILM, input=TEXTS, dimensions=384, encoding_format="float")   # own width
    assert [len(d.embedding) for d in full.data] == [384, 384] and full.model == MINILM
    for bad in (16, 0, 385, "16", 16.0, True):
        status, err = _json(url, "/embed", {"inputs": TEXTS[0], "dimensions": bad})
        assert status == 422 and err["error_type"] == "validation" and "dimensions" in err["error"], (bad, err)
    status, vecs = _json(url, "/embed", {"inputs": TEXTS[0], "dimensions": 384})
    assert status == 200 and len(vecs[0]) == 384


def test_dimensions_is_honoured_for_a_matryoshka_model(matryoshka):
    import openai

    from bench.windve.system.encoder import normalize
    from bench.windve.system.service import RequestError

    url, svc, _ = matryoshka
    assert svc.matryoshka and svc.encoder.dim == 32
    full = svc.encoder.embed(TEXTS)
    want = normalize(full[:, :8])   # the first 8 dimensions, then normalised
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=60)
    for fmt in ("float", "base64"):
        out = client.embeddings.create(model="stand-in", input=TEXTS, dimensions=8, encoding_format=fmt)
        got = [d.embedding if fmt == "float" else np.frombuffer(base64.b64decode(d.embedding), dtype="<f4")
               for d in out.data]
        assert np.asarray(got).shape == (2, 8) and np.allclose(got, want, atol=1e-5)
    status, raw = _json(url, "/embed", {"inputs": TEXTS, "dimensions": 8, "normalize": False})
    assert status == 200 and np.allclose(raw, full[:, :8], atol=1e-5)
    assert min(cosine(a, b) for a, b in zip(_json(url, "/embed", {"inputs": TEXTS})[1], full)) >= 0.9999
    status, err = _json(url, "/embed", {"inputs": TEXTS[0], "dimensions": 33})
    assert status == 422 and "between 1 and the model's 32" in err["error"]
    svc.encoder.matryoshka_dimensions = (8, 16)   # a model that declares its trained widths takes only those
    try:
        assert svc.dimensions(16) == 16
        with pytest.raises(RequestError, match=r"only supports \[8, 16\] matryoshka dimensions, got 12"):
            svc.dimensions(12)
    finally:
        svc.encoder.matryoshka_dimensions = None


def test_info_names_the_model_by_its_hub_id(minilm, matryoshka):
    status, info = _json(minilm[0], "/info")
    assert status == 200 and info["model_id"] == MINILM and info["served_model_name"] == MINILM
    assert info["windve"]["matryoshka"] is False and info["windve"]["model_id"] == MINILM
    status, info = _json(matryoshka[0], "/info")   # a local folder: its path, as TEI gives it
    assert status == 200 and info["model_id"] == matryoshka[1].encoder.path and info["windve"]["matryoshka"]
