"""Real clients against the running WindVE service on 127.0.0.1 (issue 33, part 1): Hugging Face's
``InferenceClient(url).feature_extraction`` (how text-embeddings-inference documents its use) and OpenAI's
official client on ``/v1/embeddings`` (float and base64), each checked for dimensions, unit norm and cosine
1.0 against the model's own output; a 429 of the queue manager reaches each client as that client's own
rate-limit error; ``/info``, ``/tokenize`` and ``GET /`` answer in TEI's shapes."""
from __future__ import annotations

import base64
import json
import urllib.request

import numpy as np
import pytest

from .conftest import cosine

TEXTS = ["what is the capital of france", "vector embeddings for retrieval augmented generation",
         "a third query, for the batch"]


def _refs(encoder, texts) -> np.ndarray:
    from bench.windve.system.encoder import normalize

    return normalize(encoder.embed(texts))


def _check(got, ref, dim: int) -> None:
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == (len(ref), dim)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert min(cosine(g, r) for g, r in zip(got, ref)) >= 0.9999


def _overload(url: str) -> None:
    """Every request refused from now on: deadline admission with an SLO no device can meet (429)."""
    req = urllib.request.Request(url + "/admin/config", data=json.dumps({"slo_s": 1e-6}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200


def test_huggingface_inference_client(serve_windve, encoder, monkeypatch):
    from huggingface_hub import InferenceClient, constants
    from huggingface_hub.errors import HfHubHTTPError

    url, svc = serve_windve()
    # the tests run with HF_HUB_OFFLINE=1, which blocks every request of huggingface_hub, 127.0.0.1's too: lift
    # it for this test only, with the Hub's address pointed at a closed local port (nothing leaves the machine)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    client = InferenceClient(url, timeout=60)
    ref = _refs(encoder, TEXTS)
    _check(client.feature_extraction(TEXTS[0]), ref[:1], svc.encoder.dim)                # single: POST /
    _check(client.feature_extraction(TEXTS), ref, svc.encoder.dim)                      # batch
    _check(client.feature_extraction(TEXTS[1], normalize=True, truncate=True), ref[1:2], svc.encoder.dim)
    _overload(url)
    with pytest.raises(HfHubHTTPError) as exc:
        client.feature_extraction(TEXTS[0])
    assert exc.value.response.status_code == 429
    assert json.loads(exc.value.response.text)["error_type"] == "overloaded"


def test_openai_client_float_and_base64(serve_windve, encoder):
    import openai

    url, svc = serve_windve()
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=60)
    ref = _refs(encoder, TEXTS)
    for fmt in ("float", "base64"):   # asked for base64, the client hands the string over as it came
        out = client.embeddings.create(model="minilm", input=TEXTS, encoding_format=fmt)
        assert [d.index for d in out.data] == [0, 1, 2] and out.usage.prompt_tokens > 0
        vecs = [d.embedding if fmt == "float" else np.frombuffer(base64.b64decode(d.embedding), dtype="<f4")
                for d in out.data]
        _check(vecs, ref, svc.encoder.dim)
    # no format given: the client asks for base64 itself and decodes the float32 bytes (its default path)
    one = client.embeddings.create(model="minilm", input=TEXTS[0])
    _check([one.data[0].embedding], ref[:1], svc.encoder.dim)
    _overload(url)
    with pytest.raises(openai.RateLimitError) as exc:
        client.embeddings.create(model="minilm", input=TEXTS[0])
    assert exc.value.status_code == 429


def test_tei_info_tokenize_and_root_health(serve_windve, encoder):
    url, svc = serve_windve()
    with urllib.request.urlopen(url + "/info", timeout=30) as r:
        info = json.loads(r.read())
    for key in ("model_id", "model_sha", "model_dtype", "model_type", "max_concurrent_requests",
                "max_input_length", "max_batch_tokens", "max_batch_requests", "max_client_batch_size",
                "auto_truncate", "tokenization_workers", "version"):
        assert key in info, key
    assert info["model_dtype"] == "float32" and info["auto_truncate"] is False
    assert set(info["windve"]) >= {"devices", "depths", "laws"}
    with urllib.request.urlopen(url + "/", timeout=30) as r:   # TEI's health on GET /
        assert r.status == 200
    req = urllib.request.Request(url + "/tokenize", data=json.dumps({"inputs": "Hello world"}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        toks = json.loads(r.read())[0]
    assert [t["special"] for t in toks] == [True, False, False, True]
    assert [t["text"] for t in toks[1:3]] == ["Hello", "world"] and (toks[2]["start"], toks[2]["stop"]) == (6, 11)
    assert [t["id"] for t in toks] == encoder.tokenizer("Hello world")["input_ids"]
