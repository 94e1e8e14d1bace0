import numpy as np
import pytest

from bench.ann.metrics import recall_at_k
from bench.core.base.errors import ConfigError
from bench.trinity.system import batching, event_loop, workload
from bench.trinity.system.engine import ExtendEngine

CLASSES = [{"k": 10, "top_m": 16}, {"k": 10, "top_m": 32}, {"k": 20, "top_m": 24}]


def _requests(n, seed, rate=None):
    src = workload.Source(workload.parse_classes(CLASSES, "test"), n, seed)
    times = np.zeros(n) if rate is None else workload.schedule("poisson", rate, n, seed)
    src.add_open_loop(times)
    return src


def _run(engine, queries, policy, src):
    done, log = event_loop.run(event_loop.LiveAdapter(engine, queries), policy, src)
    return {r.rid: (r.ids.tolist(), r.extends) for r in done}, log


def test_recall_is_high(small, engine_factory):
    e = engine_factory(capacity=16, top_m_max=32)
    src = workload.Source([workload.RequestClass(10, 32)], 40, 0)
    src.add_open_loop(np.zeros(40))
    done, _ = event_loop.run(event_loop.LiveAdapter(e, small["queries"]), batching.make("continuous", 16, 0), src)
    ids = np.stack([r.ids for r in sorted(done, key=lambda r: r.rid)])
    qidx = [r.qidx for r in sorted(done, key=lambda r: r.rid)]
    assert recall_at_k(ids, small["gt"][qidx], 10) >= 0.9


@pytest.mark.parametrize("p", [1, 2])
def test_same_ids_batch1_static_continuous(small, engine_factory, p):
    q = small["queries"]
    one, _ = _run(engine_factory(capacity=1, p=p, top_m_max=32), q, batching.make("continuous", 1, 0),
                  _requests(16, 1))
    stat, _ = _run(engine_factory(capacity=8, p=p, top_m_max=32), q, batching.make("static", 8, 0.001),
                   _requests(16, 1, 2000.0))
    cont, _ = _run(engine_factory(capacity=8, p=p, chunk=40, top_m_max=32), q, batching.make("continuous", 8, 0.001),
                   _requests(16, 1, 5000.0))
    assert one.keys() == stat.keys() == cont.keys()
    assert one == stat == cont


def test_replay_matches_live(small, engine_factory):
    q = small["queries"]
    e = engine_factory(capacity=8, trace=True, chunk=64)
    ad = event_loop.LiveAdapter(e, q)
    src = workload.Source([workload.RequestClass(32, 32)], 40, 0)
    src.add_open_loop(np.zeros(40))
    done, log = event_loop.run(ad, batching.make("continuous", 8, 0), src)
    traces = {(r.qidx, r.top_m): event_loop.Trace(np.array(r.steps), r.ids) for r in done}
    assert all(len(t.steps) == r.extends for r in done for t in [traces[(r.qidx, r.top_m)]])
    src2 = workload.Source([workload.RequestClass(10, 32)], 40, 0)
    src2.add_open_loop(np.zeros(40))
    rep = event_loop.ReplayAdapter(traces, 8, e.lanes, event_loop.TimeModel(ad.samples, 0))
    done2, log2 = event_loop.run(rep, batching.make("continuous", 8, 0), src2)
    assert sorted(log2.fill) == sorted(log.fill) and len(done2) == 40
    assert all(np.array_equal(r.ids, traces[(r.qidx, 32)].ids[:10]) for r in done2)


def test_static_arrivals_wait_for_next_batch(small, engine_factory):
    done, _ = event_loop.run(event_loop.LiveAdapter(engine_factory(capacity=4), small["queries"]),
                          batching.make("static", 4, 0.0005), _requests(20, 3, 3000.0))
    batches = sorted({r.admitted for r in done})
    for b0, b1 in zip(batches, batches[1:]):
        members = [r for r in done if r.admitted == b0]
        assert len(members) <= 4
        assert b1 >= max(r.done for r in members)


def test_bad_inputs_raise_before_work(small, engine_factory):
    e = engine_factory(capacity=2, top_m_max=32)
    q = small["queries"]
    with pytest.raises(ConfigError, match="dimension 64 does not match the index dimension 128"):
        e.admit(np.zeros((1, 64), np.float32), [10], [32], [None])
    with pytest.raises(ConfigError, match="k=40 is larger than top-M=32"):
        e.admit(q[:1], [40], [32], [None])
    bad = q[:1].copy()
    bad[0, 3] = np.nan
    with pytest.raises(ConfigError, match="NaN"):
        e.admit(bad, [10], [32], [None])
    with pytest.raises(ConfigError, match="top_m_max=3000"):
        ExtendEngine(small["base"], small["graph"], capacity=1, top_m_max=3000)
    with pytest.raises(ConfigError, match="larger than the N=2000"):
        from bench.trinity.system.engine import validate_queries
        validate_queries(q[:1], 128, [2001], [2001], 2000)
    with pytest.raises(ConfigError, match="p=0 must be > 0"):
        engine_factory(p=0)
    with pytest.raises(ConfigError, match="D=16 must be < N=10"):
        ExtendEngine(small["base"][:10], small["graph"][:10], capacity=1)
    with pytest.raises(ConfigError, match="does not match its vectors"):
        ExtendEngine(small["base"][:100], small["graph"], capacity=1)
    with pytest.raises(ConfigError, match="offered rate must be > 0"):
        workload.schedule("poisson", 0.0, 10, 0)
    with pytest.raises(ConfigError, match="offered rate must be > 0"):
        workload.schedule("bursty", -1.0, 10, 0)
    assert e.n_active() == 0, "nothing admitted by a rejected call"


@pytest.mark.gpu
def test_cuda_gives_the_cpu_ids(small, engine_factory):
    q = small["queries"]
    cpu, _ = _run(engine_factory(capacity=8), q, batching.make("continuous", 8, 0), _requests(30, 1))
    gpu, _ = _run(engine_factory(capacity=8, device="cuda"), q, batching.make("continuous", 8, 0), _requests(30, 1))
    assert cpu == gpu


def test_continuous_admits_at_the_next_extend(small, engine_factory):
    q = small["queries"]
    ad = event_loop.LiveAdapter(engine_factory(capacity=8), q)
    done, log = event_loop.run(ad, batching.make("continuous", 8, 0.0), _requests(40, 5, 4000.0))
    starts = np.array(log.start)
    ends = {s + d for s, d in zip(log.start, log.dur)}
    for r in done:
        i = int(np.searchsorted(starts, r.arrival))      # the first extend starting at or after the arrival
        assert r.admitted >= starts[i]
        if r.admitted > starts[i]:
            assert log.active[i] == 8, "a request waits past the next extend only when every slot is busy"
        assert r.done in ends, "a request leaves at the end of its last extend"


def test_recall_step_sweeps_parents_per_extend(study):
    import pandas as pd

    df = pd.read_parquet(study["records"]["recall"][0])
    p2 = df[df.system == "engine-continuous-p2"]
    assert set(p2.value) == {10, 32} and (p2.p == 2).all()
    assert (df[df.system == "engine-continuous"].p == study["params"]["engine"]["p"]).all()


def test_clear_starts_the_engine_afresh(small, engine_factory):
    """The roofline times each extend on a fresh admission (issue 29): after ``clear`` an engine mid-search
    searches new queries exactly as a new engine does (every extend's distance work equal)."""
    q = small["queries"]

    def fills(e, rows):
        e.admit(q[rows], [10] * len(rows), [32] * len(rows), [None] * len(rows))
        out = []
        for _ in range(3):
            e.extend()
            out.append(e.last_fill)
        return out
    used = engine_factory(capacity=4, top_m_max=32)
    fills(used, np.arange(4))
    used.clear()
    assert used.n_free() == 4 and used.n_active() == 0
    assert fills(used, np.arange(4, 8)) == fills(engine_factory(capacity=4, top_m_max=32), np.arange(4, 8))


@pytest.fixture(scope="module")
def tiny_graph():
    from bench.ann import graph
    from bench.data import synthetic

    xb, xq = synthetic.sift_like(300, seed=5, n_queries=6, n_clusters=6, dim=16)
    g = graph.build_graph(xb, graph.GraphParams(degree=8, knn_degree=16), seed=0)
    return xb.astype(np.float32), xq.astype(np.float32), g


def _interpreter():
    pytest.importorskip("triton")
    from bench.ann import kernels

    if not kernels.triton_interprets():
        pytest.skip("Triton imported without its interpreter (CUDA host)")


def test_the_kernel_engine_batches_continuously_and_equals_the_reference(tiny_graph):
    """Four requests through two slots (a slot refilled when its request finishes), two extends per launch:
    each result, its extends and its per-extend distance tasks equal the plain reference's."""
    from bench.ann import graph_search
    from bench.trinity.system.kernel_engine import KernelEngine

    _interpreter()
    xb, xq, g = tiny_graph
    eng = KernelEngine(xb, g, capacity=2, top_m_max=8, max_iters=32, trace=True, extends_per_launch=2)
    src = workload.Source([workload.RequestClass(4, 8)], 4, 0)
    src.add_open_loop(np.zeros(4))
    done, log = event_loop.run(event_loop.LiveAdapter(eng, xq), batching.make("continuous", 2, 0), src)
    assert eng.mode == "triton-interpreter (2 extends per launch)" and set(log.launches) == {1}
    total = 0
    for r in done:
        ids, d, extends, steps = graph_search.reference(eng.g, xq[r.qidx], 4, 8, 32)
        assert r.ids.tolist() == ids.tolist() and r.extends == extends and r.steps == steps
        total += sum(steps)
    assert sum(log.fill) == total


def test_one_kernel_search_equals_the_reference_and_the_torch_engine_recall(tiny_graph):
    """The whole search in one launch (one program per query); its recall beside the torch engine's."""
    from bench.ann import census, graph_search
    from bench.ann.metrics import recall_at_k
    from bench.data import groundtruth

    _interpreter()
    xb, xq, g = tiny_graph
    gr = graph_search.Graph.build(xb, g, seed=0)
    with census.Census() as c:
        ids, d, slots = graph_search.search(gr, xq[:4], 4, 8, max_iters=32, trace=True)
    assert (c.counts.triton_launches, c.counts.syncs) == (1, 0), c.counts
    for i in range(4):
        rid, rd, extends, steps = graph_search.reference(gr, xq[i], 4, 8, 32)
        assert ids[i].tolist() == rid.tolist() and d[i].numpy().tobytes() == rd.tobytes()
        assert int(slots.iters[i]) == extends and slots.steps[i, :extends].tolist() == steps
    gt, _ = groundtruth.exact_knn(xb, xq[:4], 4)
    torch_eng = ExtendEngine(xb, g, capacity=4, top_m_max=8, max_iters=32, seed=0)
    torch_eng.admit(xq[:4], [4] * 4, [8] * 4, list(range(4)))
    out = []
    while len(out) < 4:
        out += torch_eng.extend()
    torch_ids = np.stack([f.ids for f in sorted(out, key=lambda f: f.tag)])
    assert abs(recall_at_k(ids.numpy(), gt, 4) - recall_at_k(torch_ids, gt, 4)) <= 0.1


def test_an_extend_is_one_launch_without_host_sync_where_the_torch_engine_runs_many_ops(small, tiny_graph):
    from bench.ann import census
    from bench.trinity.system.kernel_engine import KernelEngine

    _interpreter()
    xb, xq, g = tiny_graph
    eng = KernelEngine(xb, g, capacity=2, top_m_max=8, max_iters=32, sync_every=1000)
    eng.admit(xq[:2], [4, 4], [8, 8], [0, 1])
    with census.Census() as c:
        eng.extend()
    assert (c.counts.triton_launches, c.counts.syncs, c.counts.h2d) == (1, 0, 0) and c.counts.launches <= 4
    torch_eng = ExtendEngine(small["base"], small["graph"], capacity=32, top_m_max=64, chunk=256, sync_every=1000,
                             skip_idle=False)
    torch_eng.admit(small["queries"][:32], [10] * 32, [64] * 32, list(range(32)))
    torch_eng.extend()
    with census.Census() as t:
        torch_eng.extend()
    assert t.counts.launches > 50 and t.counts.syncs == 0, t.counts.ops   # fixed shape: no sync, many ops


@pytest.mark.gpu
def test_the_compiled_graph_kernel_equals_the_reference_on_cuda(tiny_graph):
    pytest.importorskip("triton")
    from bench.ann import graph_search

    xb, xq, g = tiny_graph
    gr = graph_search.Graph.build(xb, g, seed=0, device="cuda")
    ids, d, slots = graph_search.search(gr, xq, 4, 8, max_iters=32)
    for i in range(len(xq)):
        rid, rd, extends, _ = graph_search.reference(gr, xq[i], 4, 8, 32)
        assert ids[i].tolist() == rid.tolist() and d[i].cpu().numpy().tobytes() == rd.tobytes()
        assert int(slots.iters[i]) == extends
