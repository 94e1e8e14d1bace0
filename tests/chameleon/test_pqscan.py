import numpy as np
import pytest
import torch

from bench.chameleon.system import pqscan
from bench.core.base.errors import ConfigError


def test_torch_scan_matches_faiss(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    ivf = pqscan.ivfpq_of(index)
    Dq, Iq = ivf.quantizer.search(xq, 4)
    Df, If = pqscan.faiss_scan(index, xq, Iq, Dq, 50)
    Dt, It = pqscan.scan(layout, xq, Iq, 50, coarse_dist=torch.from_numpy(Dq))
    assert pqscan.overlap(If, It.numpy()).mean() >= 0.99
    np.testing.assert_allclose(Dt.numpy(), Df, rtol=1e-3, atol=1e-2)


def test_coarse_assign_matches_faiss(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.ivfpq_of(index).quantizer.search(xq, 4)
    _, It = pqscan.coarse_assign(layout, xq, 4)
    assert (np.sort(It.numpy(), 1) == np.sort(Iq, 1)).mean() > 0.99


def test_layout_holds_every_vector(small_index):
    index, xb, _ = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    assert layout.sizes.sum() == len(xb) == len(layout.ids)
    assert sorted(layout.ids.tolist()) == list(range(len(xb)))
    assert layout.code_bytes(np.array([[0, 1]])) == (layout.sizes[0] + layout.sizes[1]) * layout.m


def test_bad_parameters():
    with pytest.raises(ConfigError, match="does not divide"):
        pqscan.check_params(128, 12)
    with pytest.raises(ConfigError, match="nprobe"):
        pqscan.check_params(128, 16, nlist=8, nprobe=9)
    with pytest.raises(pqscan.KTooLargeError, match="query 1"):
        pqscan.check_k(np.array([500, 40, 600]), 100)


def test_scan_rejects_k_larger_than_probed(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.ivfpq_of(index).quantizer.search(xq[:2], 1)
    with pytest.raises(pqscan.KTooLargeError):
        pqscan.scan(layout, xq[:2], Iq, 4000)


def test_recall_and_overlap():
    a = np.array([[1, 2, 3], [4, 5, 6]])
    b = np.array([[3, 2, 9], [4, 5, 6]])
    assert pqscan.overlap(a, b).tolist() == [2 / 3, 1.0]


@pytest.mark.gpu
def test_torch_scan_cuda_matches_cpu(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.ivfpq_of(index).quantizer.search(xq, 4)
    _, Ic = pqscan.scan(layout, xq, Iq, 50)
    _, Ig = pqscan.scan(layout.to("cuda"), xq, Iq, 50)
    assert pqscan.overlap(Ic.numpy(), Ig.cpu().numpy()).mean() >= 0.99


def per_query_scan(layout, xq, lists, coarse_dist, k):
    """The scan written the plain way, one query at a time: its lookup table, the gather-sum over the
    codes of its probed lists, its top-K (the reference the batched kernel must equal)."""
    x = torch.from_numpy(np.asarray(xq, dtype=np.float32))
    m = layout.m
    out_d, out_i = [], []
    for b in range(len(x)):
        lut = torch.einsum("md,mkd->mk", (-2.0 * x[b]).view(m, -1), layout.centroids).reshape(-1)
        rows = torch.cat([torch.arange(int(layout.offsets[lst]), int(layout.offsets[lst + 1])) for lst in lists[b]])
        coarse = torch.cat([torch.full((int(layout.sizes[lst]),), float(coarse_dist[b, j]))
                            for j, lst in enumerate(lists[b])])
        d = lut[layout.codes_off[rows].long()].sum(1) + layout.norm_term[rows] + coarse
        v, i = torch.topk(d, k, largest=False, sorted=True)
        out_d.append(v)
        out_i.append(layout.ids[rows[i]])
    return torch.stack(out_d).numpy(), torch.stack(out_i).numpy()


def _probe(index, xq, nprobe=4):
    Dq, Iq = pqscan.ivfpq_of(index).quantizer.search(xq, nprobe)
    return Dq, Iq


@pytest.mark.parametrize("path", ["shared", "pairs", "pairs-chunked"])
def test_batched_scan_equals_per_query_scan_and_faiss(small_index, monkeypatch, path):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    Dq, Iq = _probe(index, xq)
    monkeypatch.setattr(pqscan, "SHARE_MAX", 10 ** 9 if path == "shared" else 0)
    if path == "pairs-chunked":   # a few queries per chunk
        monkeypatch.setitem(pqscan.CHUNK_ELEMS, "cpu", 4 * int(layout.sizes[Iq].sum(1).max()) * layout.m)
    assert {s for _, _, s in pqscan.plan(layout, Iq)} == {path == "shared"}
    Db, Ib = pqscan.scan(layout, xq, Iq, 30, coarse_dist=torch.from_numpy(Dq))
    Dr, Ir = per_query_scan(layout, xq, Iq, Dq, 30)
    np.testing.assert_allclose(Db.numpy(), Dr, rtol=1e-5, atol=1e-4)
    assert pqscan.overlap(Ib.numpy(), Ir).mean() >= 0.99
    Df, If = pqscan.faiss_scan(index, xq, Iq, Dq, 30)
    np.testing.assert_allclose(Db.numpy(), Df, rtol=1e-3, atol=1e-2)
    assert pqscan.overlap(Ib.numpy(), If).mean() >= 0.99


def test_shared_and_pairs_paths_agree_exactly(small_index, monkeypatch):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    Dq, Iq = _probe(index, xq, 6)
    out = {}
    for name, share in (("shared", 10 ** 9), ("pairs", 0)):
        monkeypatch.setattr(pqscan, "SHARE_MAX", share)
        out[name] = pqscan.scan(layout, xq, Iq, 25, coarse_dist=torch.from_numpy(Dq))
    np.testing.assert_allclose(out["shared"][0].numpy(), out["pairs"][0].numpy(), rtol=1e-6, atol=1e-5)
    assert pqscan.overlap(out["shared"][1].numpy(), out["pairs"][1].numpy()).mean() >= 0.99


def test_small_batch_equals_large_batch(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = _probe(index, xq[:12])
    Dg, Ig = pqscan.scan(layout, xq[:12], Iq, 20)
    for b in range(0, 12, 3):
        Ds, Is = pqscan.scan(layout, xq[b:b + 3], Iq[b:b + 3], 20)
        np.testing.assert_allclose(Ds.numpy(), Dg[b:b + 3].numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("share", [0, 10 ** 9])
def test_launches_per_batch_do_not_grow_with_queries(small_index, monkeypatch, share):
    """One chunk per batch while memory allows, and the same (top-level) torch ops for 5 queries or 50."""
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    monkeypatch.setattr(pqscan, "SHARE_MAX", share)
    monkeypatch.setattr(pqscan, "GROUP", 10 ** 6)
    monkeypatch.setitem(pqscan.CHUNK_ELEMS, "cpu", 1 << 40)
    calls = []
    for name in ("_scan_pairs", "_scan_shared"):
        fn = getattr(pqscan, name)
        monkeypatch.setattr(pqscan, name, lambda *a, _fn=fn, _n=name, **kw: (calls.append(_n), _fn(*a, **kw))[1])
    ops = {}
    for nq in (5, 50):
        Dq, Iq = _probe(index, xq[:nq])
        calls.clear()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            pqscan.scan(layout, xq[:nq], Iq, 10, coarse_dist=torch.from_numpy(Dq))
        assert calls == ["_scan_pairs" if share == 0 else "_scan_shared"]
        ops[nq] = sorted(e.name for e in prof.events() if e.name.startswith("aten::") and e.cpu_parent is None)
    assert ops[5] == ops[50]


def test_chunks_respect_the_budget():
    cost = np.array([5, 5, 5, 20, 1, 1])
    assert pqscan._chunks(cost, 10, 100) == [(0, 2), (2, 3), (3, 4), (4, 6)]
    assert pqscan._chunks(cost, 100, 2) == [(0, 2), (2, 4), (4, 6)]


def test_counting_segments_on_host_and_device_paths():
    starts, lens = np.array([10, 0, 7, 3]), np.array([3, 0, 2, 1])
    want = [10, 11, 12, 7, 8, 3]
    assert pqscan._counting(starts, lens, "cpu").tolist() == want
    base = starts - (np.cumsum(lens) - lens)
    assert pqscan._counting_torch(base, lens, "cpu", 1).tolist() == want
    assert pqscan._counting(starts, lens, "cpu", step=5).tolist() == [10, 15, 20, 7, 12, 3]
    base5 = starts - 5 * (np.cumsum(lens) - lens)
    assert pqscan._counting_torch(base5, lens, "cpu", 5).tolist() == [10, 15, 20, 7, 12, 3]


def test_plain_gather_sum_equals_embedding_bag():
    table = torch.randn(3 * 4 * 256)
    idx = torch.randint(0, len(table), (50, 4), dtype=torch.int32)
    np.testing.assert_allclose(pqscan._gather_sum_plain(table, idx).numpy(), pqscan._gather_sum(table, idx).numpy(),
                               rtol=1e-6, atol=1e-5)


def test_faiss_scan_equals_search_and_restores_parallel_mode(small_index):
    index, _, xq = small_index
    ivf = pqscan.ivfpq_of(index)
    Dq, Iq = _probe(index, xq)
    ivf.nprobe = 4
    D, I = index.search(xq, 20)
    Dp, Ip = pqscan.faiss_scan(index, xq, Iq, Dq, 20)
    assert ivf.parallel_mode == 0
    np.testing.assert_allclose(Dp, D, rtol=1e-5, atol=1e-4)
    assert pqscan.overlap(I, Ip).mean() >= 0.99


def test_cuda_plan_run_on_the_cpu_equals_the_cpu_plan(small_index, monkeypatch):
    """What CUDA runs (pair chunks, int32 lookup index, plain gather-sum), emulated on the CPU."""
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    Dq, Iq = _probe(index, xq)
    ref = pqscan.scan(layout, xq, Iq, 30, coarse_dist=torch.from_numpy(Dq))
    plan, counting = pqscan.plan, pqscan._counting_torch
    monkeypatch.setattr(pqscan, "plan", lambda lay, lists: plan(lay, lists, "cuda"))
    monkeypatch.setattr(pqscan, "_gather_sum", pqscan._gather_sum_plain)
    monkeypatch.setattr(pqscan, "_counting",
                        lambda s, n, dev, step=1: counting(s - step * (np.cumsum(n) - n), n, dev, step))
    assert pqscan.plan(layout, Iq) == [(0, len(xq), False)]
    out = pqscan.scan(layout, xq, Iq, 30, coarse_dist=torch.from_numpy(Dq))
    np.testing.assert_allclose(out[0].numpy(), ref[0].numpy(), rtol=1e-5, atol=1e-4)
    assert pqscan.overlap(out[1].numpy(), ref[1].numpy()).mean() >= 0.99


def test_scan_and_coarse_assign_stay_on_the_layout_device(small_index):
    """Run on torch's ``meta`` device (shapes only): every tensor the kernel makes must follow the layout
    to a non-CPU device, and the non-CPU plan (one pair chunk) must hold together."""
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index).to("meta")
    Dq, Iq = pqscan.coarse_assign(layout, xq, 4)
    assert Dq.device.type == Iq.device.type == "meta"
    _, Iq_np = _probe(index, xq)
    for coarse in (Dq, None):
        D, I = pqscan.scan(layout, xq, Iq_np, 30, coarse_dist=coarse)
        assert D.device.type == I.device.type == "meta" and D.shape == I.shape == (len(xq), 30)


@pytest.mark.gpu
def test_cuda_scan_equals_cpu_scan_and_runs_one_chunk(small_index, monkeypatch):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    Dq, Iq = _probe(index, xq)
    lay_c = layout.to("cuda")
    assert pqscan.plan(lay_c, Iq) == [(0, len(xq), False)]
    Dc, Ic = pqscan.scan(layout, xq, Iq, 30, coarse_dist=torch.from_numpy(Dq))
    Dg, Ig = pqscan.scan(lay_c, xq, torch.from_numpy(Iq).cuda(), 30, coarse_dist=torch.from_numpy(Dq).cuda())
    np.testing.assert_allclose(Dg.cpu().numpy(), Dc.numpy(), rtol=1e-4, atol=1e-3)
    assert pqscan.overlap(Ic.numpy(), Ig.cpu().numpy()).mean() >= 0.99
    monkeypatch.setitem(pqscan.CHUNK_ELEMS, "cuda", 3 * int(layout.sizes[Iq].sum(1).max()) * layout.m)
    assert len(pqscan.plan(lay_c, Iq)) > 1
    Dk, _ = pqscan.scan(lay_c, xq, Iq, 30, coarse_dist=torch.from_numpy(Dq))
    np.testing.assert_allclose(Dk.cpu().numpy(), Dc.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_cuda_coarse_assign_equals_faiss(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index).to("cuda")
    Dq, Iq = _probe(index, xq, 5)
    Dt, It = pqscan.coarse_assign(layout, xq, 5)
    assert It.device.type == "cuda"
    assert (np.sort(It.cpu().numpy(), 1) == np.sort(Iq, 1)).mean() > 0.99
    np.testing.assert_allclose(Dt.cpu().numpy(), Dq, rtol=1e-3, atol=1e-2)


def test_the_fused_backend_matches_the_torch_kernel_under_the_interpreter(small_index):
    """Chameleon's ``gpu`` path without faiss GPU (backends.Fused) run by Triton's interpreter on the CPU:
    the same neighbours as the project's torch kernel (6 programs: 3 queries x 2 probed lists)."""
    pytest.importorskip("triton")
    from bench.ann import kernels
    from bench.chameleon.system import backends

    if not kernels.triton_interprets():
        pytest.skip("Triton imported without its interpreter (CUDA host)")
    index, _, xq = small_index
    cfg = backends.Fused(index, 2, device="cpu", block=16)
    out = cfg.search(xq[:3], 10)
    assert out.parts["backend"] == "triton-interpreter"
    layout = pqscan.IVFPQLayout.from_faiss(index)
    Dq, Iq = pqscan.coarse_assign(layout, xq[:3], 2)
    Dt, It = pqscan.scan(layout, xq[:3], Iq.numpy(), 10, coarse_dist=Dq)
    np.testing.assert_allclose(out.D, Dt.numpy(), rtol=1e-5, atol=1e-4)
    assert pqscan.overlap(out.I, It.numpy()).mean() >= 0.99


def structure(layout, xq, nprobe, k, fused: bool):
    """Census of one batch from queries on the device to (D, I) on the device: the torch kernel as the CUDA
    backend runs it (coarse on the device, the probed lists read back, the plan in numpy, pair chunks),
    or the fused search (its Triton launch counted, not run)."""
    from bench.ann import census, ivfpq_fused

    x = torch.from_numpy(xq)
    if fused:
        lists = layout.interleaved(32)
        with census.Census(dry=True) as c:
            ivfpq_fused.search(lists, x, nprobe, k)
        return c.counts
    plan = pqscan.plan
    with census.Census() as c:
        Dq, Iq = pqscan.coarse_assign(layout, x, nprobe)
        pqscan.plan = lambda lay, lists_np, device_type=None: plan(lay, lists_np, "cuda")
        try:
            pqscan.scan(layout, x, Iq.cpu().numpy(), k, coarse_dist=Dq)
        finally:
            pqscan.plan = plan
    return c.counts


def test_the_fused_search_drops_the_host_round_trip_and_most_of_the_memory_traffic(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.coarse_assign(layout, xq[:32], 8)
    code_bytes = layout.code_bytes(Iq.numpy())
    before, after = structure(layout, xq[:32], 8, 20, False), structure(layout, xq[:32], 8, 20, True)
    assert before.syncs >= 1 and before.h2d >= 4                      # the lists read back, the plan copied in
    assert after.syncs == 0 and after.h2d == 0 and after.triton_launches == 1 and after.launches <= 13
    assert after.bytes / code_bytes < 0.25 * before.bytes / code_bytes, (before.bytes, after.bytes)
