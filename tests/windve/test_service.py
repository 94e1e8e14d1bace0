"""The WindVE service on 127.0.0.1: embeddings equal the model's own output on every device path,
every bad input of the issue gets a clear error while the service keeps serving, and the overload
case (3x the max concurrency) answers every request with a correct embedding or a 429."""
from __future__ import annotations

import asyncio
import json

import aiohttp
import numpy as np
import pytest

from .conftest import cosine


def _post(url, path, payload=None, data=None):
    async def go():
        async with aiohttp.ClientSession() as s:
            kw = {"json": payload} if data is None else {"data": data}
            async with s.post(url + path, timeout=aiohttp.ClientTimeout(total=30), **kw) as r:
                return r.status, dict(r.headers), await r.text()
    return asyncio.run(go())


def _get(url, path):
    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.get(url + path, timeout=aiohttp.ClientTimeout(total=30)) as r:
                return r.status, await r.text()
    return asyncio.run(go())


TEXTS = ["what is the capital of france", "vector embeddings for retrieval augmented generation"]


@pytest.mark.parametrize("device", ["emulated", "cpu"])
def test_embeddings_equal_the_model_on_every_device_path(serve_windve, encoder, device):
    url, svc = serve_windve()
    _post(url, "/admin/config", {"active": [device]})
    ref = encoder.embed(TEXTS)
    st, hdr, body = _post(url, "/embed", {"inputs": TEXTS, "normalize": False})
    assert st == 200 and hdr["x-device"] == device
    assert hdr["x-source"] == ("emulated" if device == "emulated" else "measured")
    got = json.loads(body)
    assert min(cosine(g, r) for g, r in zip(got, ref)) >= 0.9999
    assert np.allclose(np.linalg.norm(got, axis=1), np.linalg.norm(ref, axis=1), rtol=1e-4)
    st, _, body = _post(url, "/v1/embeddings", {"input": TEXTS[0], "model": "minilm"})
    out = json.loads(body)
    assert st == 200 and out["object"] == "list" and out["usage"]["prompt_tokens"] > 0
    assert cosine(out["data"][0]["embedding"], ref[0]) >= 0.9999
    assert np.linalg.norm(out["data"][0]["embedding"]) == pytest.approx(1, abs=1e-5)
    st, _, body = _post(url, "/v1/embeddings", {"input": TEXTS, "encoding_format": "base64"})
    import base64
    vec = np.frombuffer(base64.b64decode(json.loads(body)["data"][1]["embedding"]), dtype=np.float32)
    assert cosine(vec, ref[1]) >= 0.9999


def test_bad_inputs_get_clear_errors_and_the_service_keeps_serving(serve_windve, encoder):
    url, svc = serve_windve(max_client_batch_size=4)
    long_text = " ".join(["hello"] * 600)
    cases = [
        ({"inputs": []}, 422, "cannot be empty"),
        ({"inputs": ""}, 422, "empty string"),
        ({"inputs": ["ok", ""]}, 422, "empty string"),
        ({"inputs": [1, 2]}, 422, "must be a string"),
        ({"inputs": {"a": 1}}, 422, "string or a list"),
        ({"inputs": ["x"] * 5}, 422, "maximum allowed batch size 4"),
        ({"inputs": long_text}, 413, "at most 512"),
        ({"inputs": "x", "normalize": "yes"}, 422, "normalize"),
        ({"text": "x"}, 422, "missing field `inputs`"),
    ]
    for payload, status, words in cases:
        st, _, body = _post(url, "/embed", payload)
        assert st == status and words in json.loads(body)["error"], (payload, body)
    st, _, body = _post(url, "/embed", data=b"{not json")
    assert st == 400 and "not valid JSON" in body
    st, _, body = _post(url, "/v1/embeddings", {"input": [[101, 102]]})
    assert st == 422
    st, _, body = _post(url, "/embed", {"inputs": long_text, "truncate": True, "normalize": False})
    assert st == 200 and cosine(json.loads(body)[0], encoder.embed([long_text])[0]) >= 0.9999
    st, _, body = _post(url, "/embed", {"inputs": "still serving"})
    assert st == 200 and _get(url, "/health")[0] == 200
    st, _, body = _post(url, "/admin/config", {"depths": {"cpu": 0}})
    assert st == 422 and "depth" in body


def _burst(url, texts, timeout_s):
    async def go():
        conn = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=conn) as s:
            async def one(t):
                async with s.post(url + "/embed", json={"inputs": t, "normalize": False},
                                  timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
                    return r.status, r.headers.get("x-device"), r.headers.get("Retry-After"), await r.text()
            return await asyncio.gather(*(one(t) for t in texts), return_exceptions=True)
    return asyncio.run(go())


@pytest.mark.parametrize("offload", [True, False])
def test_overload_3x_max_concurrency_answers_every_request(serve_windve, encoder, offload):
    depths = {"emulated": 6, "cpu": 2}
    url, svc = serve_windve(acc_depth=depths["emulated"], cpu_depth=depths["cpu"], heterogeneous=offload,
                            batch_delay_ms=20)
    cap = depths["emulated"] + (depths["cpu"] if offload else 0)
    texts = [f"query number {i} about embeddings" for i in range(3 * cap)]
    ref = encoder.embed(texts)
    res = _burst(url, texts, timeout_s=30)
    assert len(res) == len(texts) and not any(isinstance(r, BaseException) for r in res), res
    ok = [i for i, r in enumerate(res) if r[0] == 200]
    busy = [r for r in res if r[0] == 429]
    assert len(ok) + len(busy) == len(texts)
    assert len(ok) >= depths["emulated"] and all(r[2] == "1" for r in busy)
    assert {res[i][1] for i in ok} <= ({"emulated", "cpu"} if offload else {"emulated"})
    assert min(cosine(json.loads(res[i][3])[0], ref[i]) for i in ok) >= 0.9999
    assert _get(url, "/health")[0] == 200
    metrics = _get(url, "/metrics")[1]
    assert f"windve_rejected_total {float(len(busy))}" in metrics
    assert 'windve_queue_depth{device="emulated"} 6.0' in metrics
    assert "windve_request_duration_seconds_bucket" in metrics and "windve_dispatch_seconds_count" in metrics
    st, _, _ = _post(url, "/embed", {"inputs": "after the storm"})
    assert st == 200


def test_info_health_and_reconfigure(serve_windve):
    url, svc = serve_windve()
    info = json.loads(_get(url, "/info")[1])
    assert info["devices"] == ["emulated", "cpu"] and info["sources"]["emulated"] == "emulated"
    assert info["emulated_law"] == {"alpha": 0.002, "beta": 0.01}
    st, _, body = _post(url, "/admin/config", {"depths": {"emulated": 3}, "offload": False,
                                              "emulated_law": {"alpha": 0.001, "beta": 0.0}, "cpu_threads": 1})
    out = json.loads(body)
    assert st == 200 and out["depths"]["emulated"] == 3 and out["offload"] is False
    assert _post(url, "/admin/config", {"bogus": 1})[0] == 422
    assert _post(url, "/admin/config", {"active": ["gpu"]})[0] == 422


def test_slo_shorter_than_one_cpu_query_is_refused(encoder):
    from bench.windve.estimator import DeviceCannotMeetSlo
    from bench.windve.service import EmbeddingService
    from bench.windve.settings import ServiceConfig

    cfg = ServiceConfig(emulate="v100-xeon", emulated_alpha=0.001, emulated_beta=0.0, slo_s=1e-4)
    with pytest.raises(DeviceCannotMeetSlo, match="CPU cannot help"):
        EmbeddingService(cfg, encoder=encoder)


@pytest.mark.gpu
def test_cuda_instance_serves_the_models_embeddings(encoder):
    """On a CUDA machine the real GPU instance runs (no emulation) and serves the model's output."""
    from .conftest import running
    from bench.windve.service import EmbeddingService
    from bench.windve.settings import ServiceConfig

    svc = EmbeddingService(ServiceConfig(emulate="v100-xeon", emulated_alpha=0.001, emulated_beta=0.0), encoder=encoder)
    assert svc.plan.devices[0] == "cuda"
    with running(svc) as url:
        st, hdr, body = _post(url, "/embed", {"inputs": TEXTS, "normalize": False})
        assert st == 200 and hdr["x-device"] == "cuda" and hdr["x-source"] == "measured"
        ref = encoder.embed(TEXTS)
        assert min(cosine(g, r) for g, r in zip(json.loads(body), ref)) >= 0.9999
