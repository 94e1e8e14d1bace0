"""The WindVE service on 127.0.0.1: embeddings equal the model's own output on every device path
(the accelerator is the CUDA GPU where there is one, else the emulated one: :data:`.conftest.ACC`), every
bad input of the issue gets a clear error while the service keeps serving, the overload case (3x the max
concurrency) answers every request with a correct embedding or a 429 counted once, /health says ready
only once every instance is warm, and deadline admission keeps accepted requests within the SLO."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import aiohttp
import numpy as np
import pytest

from .conftest import ACC, ACC_SOURCE, cosine


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


def _samples(url) -> dict:
    """/metrics as {(sample name, frozenset(labels)): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(_get(url, "/metrics")[1]):
        for smp in fam.samples:
            out[(smp.name, frozenset(smp.labels.items()))] = smp.value
    return out


def _sum(samples, name, **labels) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


TEXTS = ["what is the capital of france", "vector embeddings for retrieval augmented generation"]


@pytest.mark.parametrize("path", ["accelerator", "cpu"])
def test_embeddings_equal_the_model_on_every_device_path(serve_windve, encoder, path):
    url, svc = serve_windve()
    device = ACC if path == "accelerator" else "cpu"
    assert svc.plan.devices == (ACC, "cpu")
    _post(url, "/admin/config", {"active": [device]})
    ref = encoder.embed(TEXTS)
    st, hdr, body = _post(url, "/embed", {"inputs": TEXTS, "normalize": False})
    assert st == 200 and hdr["x-device"] == device
    assert hdr["x-source"] == (ACC_SOURCE if path == "accelerator" else "measured")
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
    cases = [   # TEI's status codes and error types (router/src/http/server.rs)
        ({"inputs": []}, 400, "empty", "cannot be empty"),
        ({"inputs": ""}, 400, "empty", "cannot be empty"),
        ({"inputs": ["ok", ""]}, 400, "empty", "cannot be empty"),
        ({"inputs": [1, 2]}, 422, "validation", "must be a string"),
        ({"inputs": {"a": 1}}, 422, "validation", "string or a list"),
        ({"inputs": ["x"] * 5}, 413, "validation", "maximum allowed batch size 4"),
        ({"inputs": long_text}, 413, "validation", "at most 512"),
        ({"inputs": "x", "normalize": "yes"}, 422, "validation", "normalize"),
        ({"text": "x"}, 422, "validation", "missing field `inputs`"),
    ]
    for payload, status, kind, words in cases:
        st, _, body = _post(url, "/embed", payload)
        err = json.loads(body)
        assert st == status and words in err["error"] and err["error_type"] == kind, (payload, body)
    st, _, body = _post(url, "/embed", data=b"{not json")
    assert st == 400 and "not valid JSON" in body
    st, _, body = _post(url, "/v1/embeddings", {"input": [[101, 102]]})
    err = json.loads(body)   # the OpenAI route answers TEI's OpenAI-compatible error shape
    assert st == 422 and err["code"] == 422 and err["type"] == "validation" and "must be a string" in err["message"]
    st, _, body = _post(url, "/embed", {"inputs": long_text, "truncate": True, "normalize": False})
    assert st == 200 and cosine(json.loads(body)[0], encoder.embed([long_text])[0]) >= 0.9999
    st, _, body = _post(url, "/embed", {"inputs": "still serving"})
    assert st == 200 and _get(url, "/health")[0] == 200
    st, _, body = _post(url, "/admin/config", {"depths": {"cpu": 0}})
    assert st == 422 and "depth" in body
    m = _samples(url)   # each refusal counted once, as validation, by status; none as overload
    fail = "windve_request_failure_total"
    assert _sum(m, fail, err="validation", status="422") == 4 + 1   # the 422 cases and the OpenAI one
    assert _sum(m, fail, err="validation", status="413") == 2
    assert _sum(m, fail, err="validation", status="400") == 3 + 1   # the empty inputs and the body not JSON
    assert _sum(m, fail, err="overloaded") == 0 and _sum(m, "windve_queue_refused_total") == 0
    assert _sum(m, "windve_request_count_total") == _sum(m, "windve_request_success_total") + _sum(m, fail) == 13


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
    depths = {ACC: 6, "cpu": 2}
    url, svc = serve_windve(acc_depth=depths[ACC], cpu_depth=depths["cpu"], heterogeneous=offload,
                            batch_delay_ms=20)
    cap = depths[ACC] + (depths["cpu"] if offload else 0)
    texts = [f"query number {i} about embeddings" for i in range(3 * cap)]
    ref = encoder.embed(texts)
    res = _burst(url, texts, timeout_s=30)
    assert len(res) == len(texts) and not any(isinstance(r, BaseException) for r in res), res
    ok = [i for i, r in enumerate(res) if r[0] == 200]
    busy = [r for r in res if r[0] == 429]
    assert len(ok) + len(busy) == len(texts)
    assert len(ok) >= depths[ACC] and all(r[2] == "1" for r in busy)
    assert {res[i][1] for i in ok} <= ({ACC, "cpu"} if offload else {ACC})
    assert min(cosine(json.loads(res[i][3])[0], ref[i]) for i in ok) >= 0.9999
    assert _get(url, "/health")[0] == 200
    m = _samples(url)
    fail = "windve_request_failure_total"
    # a 429 counts once, as overload (issue 21): never among the validation errors
    assert _sum(m, fail, err="overloaded", status="429") == len(busy) == _sum(m, fail, status="429")
    assert _sum(m, fail, err="validation") == 0
    assert _sum(m, "windve_queue_refused_total", reason="depth") == len(busy)
    assert _sum(m, "windve_request_count_total") == len(texts) == _sum(m, "windve_request_success_total") + len(busy)
    assert m[("windve_queue_depth", frozenset({("device", ACC)}))] == 6
    assert _sum(m, "windve_request_duration_seconds_count") == len(ok) and _sum(m, "windve_dispatch_seconds_count")
    assert _sum(m, "windve_batch_next_size_count", device=ACC) >= 1 and m[("windve_ready", frozenset())] == 1
    st, _, _ = _post(url, "/embed", {"inputs": "after the storm"})
    assert st == 200


def test_info_health_and_reconfigure(serve_windve):
    url, svc = serve_windve()
    tei = json.loads(_get(url, "/info")[1])
    assert tei["model_type"] == {"embedding": {"pooling": "mean"}} and tei["max_input_length"] == 512
    assert tei["max_concurrent_requests"] == sum(svc.depths.values()) and tei["max_client_batch_size"] == 32
    info = tei["windve"]   # the service's own configuration, beside TEI's fields
    assert info["devices"] == [ACC, "cpu"] and info["sources"][ACC] == ACC_SOURCE and info["accelerator"] == ACC
    assert info["ready"] and info["admission"] == "depth" and info["warmed"]["cpu"] == [1, 4]
    assert info["laws"]["cpu"]["alpha"] >= 0   # fitted from the CPU's warm batches
    law = {"alpha": 0.001, "beta": 0.0}
    if ACC == "emulated":
        assert info["emulated_law"] == {"alpha": 0.002, "beta": 0.01}
    else:   # a real accelerator: there is no emulated law to change
        assert info["emulated_law"] is None
        assert _post(url, "/admin/config", {"emulated_law": law})[0] == 422
        law = None
    change = {"depths": {ACC: 3}, "offload": False, "cpu_threads": 1, "slo_s": 0.5,
              **({"emulated_law": law} if law else {})}
    st, _, body = _post(url, "/admin/config", change)
    out = json.loads(body)
    assert st == 200 and out["depths"][ACC] == 3 and out["offload"] is False and out["ready"]
    assert out["slo_s"] == 0.5 and out["admission"] == "depth+deadline"
    assert _post(url, "/admin/config", {"bogus": 1})[0] == 422
    assert _post(url, "/admin/config", {"active": ["gpu"]})[0] == 422
    assert _post(url, "/admin/config", {"slo_s": -1})[0] == 422


def test_health_is_503_until_every_instance_is_warm(encoder):
    """As TEI: not ready before the warm-up batches ran. The emulated accelerator is asked for explicitly
    (on any machine) with a slow law, so the warm-up takes long enough to be seen."""
    from bench.windve.system.service import EmbeddingService
    from bench.windve.system.service_config import ServiceConfig

    from .conftest import running, wait_ready

    cfg = ServiceConfig(emulate="v100-xeon", prefer_emulated=True, emulated_alpha=0.0, emulated_beta=0.4)
    svc = EmbeddingService(cfg, encoder=encoder)
    assert svc.plan.devices == ("emulated", "cpu")
    with running(svc, wait=False) as url:
        st, body = _get(url, "/health")
        assert st == 503 and json.loads(body)["status"] == "warming"
        st, hdr, body = _post(url, "/embed", {"inputs": "too early"})
        assert st == 503 and "warming up" in json.loads(body)["error"]
        wait_ready(url)
        assert svc.instances["emulated"].warmed == {1} and svc.instances["cpu"].warmed == {1, 4}
        assert _get(url, "/health")[0] == 200 and _post(url, "/embed", {"inputs": "now"})[0] == 200
        m = _samples(url)
        assert _sum(m, "windve_request_failure_total", err="unhealthy", status="503") == 1


async def _accepted(s, url) -> float:
    """windve_accepted_total summed over devices, read from /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    async with s.get(url + "/metrics") as r:
        text = await r.text()
    return sum(smp.value for fam in text_string_to_metric_families(text) for smp in fam.samples
               if smp.name == "windve_accepted_total")


def _timed_waves(url, waves, timeout_s=30, ordered=False):
    """Send each wave (delay_s, texts) at its delay from the start; all answers, with their wave index.
    ``ordered``: a wave also waits until the service has admitted every earlier wave (on a loaded machine
    the client can take longer than the delay to open the first wave's connections, and the second wave
    must not overtake it)."""
    async def go():
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            async def one(i, t):
                async with s.post(url + "/embed", json={"inputs": t},
                                  timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
                    await r.read()
                    return i, r.status, dict(r.headers)

            before = await _accepted(s, url) if ordered else 0.0

            async def wave(i, delay, texts):
                await asyncio.sleep(delay)
                earlier, give_up = sum(len(ts) for _, ts in waves[:i]), time.monotonic() + 10
                while ordered and i and time.monotonic() < give_up and await _accepted(s, url) < before + earlier:
                    await asyncio.sleep(0.002)
                return await asyncio.gather(*(one(i, t) for t in texts))
            got = await asyncio.gather(*(wave(i, d, ts) for i, (d, ts) in enumerate(waves)))
            return [x for w in got for x in w]
    return asyncio.run(go())


def test_deadline_admission_refuses_what_would_miss_the_slo(encoder):
    """Depth alone admits a second wave that waits for the running batch (one request of 5 texts) and then
    runs as the next one (0.3 s + 0.2 s + 0.02 s a query > SLO 1 s beyond 25 queries); admission by
    predicted completion refuses the rest, with 429 ``deadline``, and every accepted request's predicted and
    served time stays within the SLO. A burst over the depth gets 429 ``depth``. The emulated accelerator
    (explicit request) makes the law known; the SLO leaves room for the margin a busy machine adds (it
    failed under two busy cores when 5 separate requests stood for one batch, against an SLO of 0.3 s)."""
    from bench.windve.system.service import EmbeddingService
    from bench.windve.system.service_config import ServiceConfig

    from .conftest import running

    # SLO 1 s, first batch 0.02 * 5 + 0.2 = 0.3 s: admitted even with the largest margin the service may keep
    # for a busy machine (SLO / 2); a second wave of 40 cannot all fit in the next batch (0.3 + 0.2 + 0.02 k
    # <= 1 s admits k <= 25), so the rest are refused by deadline long before the depth cap of 100
    slo = 1.0
    cfg = ServiceConfig(emulate="v100-xeon", prefer_emulated=True, emulated_alpha=0.02, emulated_beta=0.2,
                        heterogeneous=False, acc_depth=100, slo_s=slo, batch_delay_ms=5)
    svc = EmbeddingService(cfg, encoder=encoder)
    with running(svc) as url:
        # the first wave is one request of 5 texts (one batch whatever the machine's load: 5 separate requests
        # on a busy machine trickle in over more than the batch delay and are rightly judged one by one)
        res = _timed_waves(url, [(0.0, [[f"first wave {i}" for i in range(5)]]),
                                 (0.05, [f"second wave {i}" for i in range(40)])], ordered=True)
        assert all(st == 200 for w, st, _ in res if w == 0), [(st, h.get("x-refused-by"), h.get("x-predicted-time"))
                                                              for w, st, h in res if w == 0]
        refused = first = [h for _, st, h in res if st == 429]
        assert refused and {h["x-refused-by"] for h in refused} == {"deadline"}
        ok = [h for _, st, h in res if st == 200]
        assert all(float(h["x-predicted-time"]) <= slo * 1e3 for h in ok)
        served = [(float(h["x-queue-time"]) + float(h["x-compute-time"])) / 1e3 for h in ok]
        assert max(served) <= slo + 0.05, served     # 50 ms for the event loop of a busy 2-core VM
        # depth: a burst above C_max is refused at once, the accepted ones predicted within the SLO
        _post(url, "/admin/config", {"depths": {"emulated": 8}, "slo_s": 1.0})
        res = _timed_waves(url, [(0.0, [f"burst {i}" for i in range(24)])])
        ok = [h for _, st, h in res if st == 200]
        refused = [h for _, st, h in res if st == 429]
        assert len(ok) <= 8 and len(ok) + len(refused) == 24
        assert "depth" in {h["x-refused-by"] for h in refused}
        assert all(float(h["x-predicted-time"]) <= 1000 for h in ok)
        m = _samples(url)
        overloaded = _sum(m, "windve_request_failure_total", err="overloaded", status="429")
        assert overloaded == len(first) + len(refused) == _sum(m, "windve_queue_refused_total")


def test_slo_shorter_than_one_cpu_query_is_refused(encoder):
    from bench.windve.system.estimator import DeviceCannotMeetSlo
    from bench.windve.system.service import EmbeddingService
    from bench.windve.system.service_config import ServiceConfig

    cfg = ServiceConfig(emulate="v100-xeon", emulated_alpha=0.001, emulated_beta=0.0, slo_s=1e-4)
    with pytest.raises(DeviceCannotMeetSlo, match="CPU cannot help"):
        EmbeddingService(cfg, encoder=encoder)


@pytest.mark.gpu
def test_cuda_instance_serves_the_models_embeddings(encoder):
    """On a CUDA machine the service picks the GPU (no emulation, even with --emulate given), warms it at
    each power-of-two batch size up to its depth, and serves the model's CPU output (cosine >= 0.9999)."""
    from bench.windve.system.service import EmbeddingService
    from bench.windve.system.service_config import ServiceConfig

    from .conftest import running

    svc = EmbeddingService(ServiceConfig(emulate="v100-xeon", emulated_alpha=0.001, emulated_beta=0.0, acc_depth=20),
                           encoder=encoder)
    assert svc.plan.devices == ("cuda", "cpu") and svc.plan.accelerator == "cuda"
    with running(svc) as url:
        assert svc.instances["cuda"].warmed == {1, 2, 4, 8, 16, 20}
        info = json.loads(_get(url, "/info")[1])["windve"]
        assert info["sources"]["cuda"] == "measured" and info["laws"]["cuda"] is not None
        texts = TEXTS + [f"query {i} on the gpu instance" for i in range(14)]
        st, hdr, body = _post(url, "/embed", {"inputs": texts, "normalize": False})
        assert st == 200 and hdr["x-device"] == "cuda" and hdr["x-source"] == "measured"
        ref = encoder.embed(texts)   # the model on the CPU
        assert min(cosine(g, r) for g, r in zip(json.loads(body), ref)) >= 0.9999


@pytest.mark.gpu
def test_steps_measure_the_gpu_unless_asked_to_emulate():
    from bench.windve import STUDY
    from bench.windve.steps.inputs import resolve_accelerator, service_args

    assert resolve_accelerator("auto") == "cuda"
    assert resolve_accelerator("cuda") == "cuda"
    assert resolve_accelerator("emulated") == "emulated"
    assert "--prefer-emulated" not in service_args(
        STUDY.parameters({"accelerator": "auto", "query_tokens": 75, "batch_delay_ms": 5}), "v100-xeon")


def test_each_answer_carries_its_own_dispatch_time(encoder):
    """x-dispatch-us is the request's own decision time, not the manager's shared "last" value: two requests
    that overlap (a slow emulated law) each get the time their own admission took (#29, per-request
    quantities). The manager is wrapped so that the n-th decision reads n microseconds."""
    from bench.windve.system.service import EmbeddingService
    from bench.windve.system.service_config import ServiceConfig

    from .conftest import running

    cfg = ServiceConfig(emulate="v100-xeon", prefer_emulated=True, emulated_alpha=0.0, emulated_beta=0.3)
    svc = EmbeddingService(cfg, encoder=encoder)
    admit, calls = svc.manager.admit, []

    def numbered(*args, **kwargs):
        dev = admit(*args, **kwargs)
        calls.append(dev)
        svc.manager.last_decision_ns = 1000 * len(calls)
        return dev
    svc.manager.admit = numbered
    with running(svc) as url:
        start = len(calls)
        got = _timed_waves(url, [(0.0, ["first"]), (0.05, ["second"])], ordered=True)
        with urllib.request.urlopen(url + "/admin/decisions") as r:   # every decision kept per request
            both = json.loads(r.read())
    kept = both["dispatch_us"]
    assert len(both["dispatch_cpu_us"]) == len(kept) and all(c >= 0 for c in both["dispatch_cpu_us"])
    assert [st for _, st, _ in got] == [200, 200]
    own = sorted(float(h["x-dispatch-us"]) for _, _, h in got)
    assert own == [float(start + 1), float(start + 2)], own
    assert kept[-2:] == own and len(kept) == len(calls)
    assert svc.decisions(clear=True)["dispatch_us"] == kept and svc.decisions()["dispatch_us"] == []
