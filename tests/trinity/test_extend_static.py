"""The static-shape extend (issue 17): no host synchronisation inside an extend, the same shapes every extend,
the bounded visited table, host reads every ``sync_every`` extends, CUDA-graph capture (GPU tests), and the
same results as the engine before (tests/trinity/reference.py)."""
import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

from bench.core.base.errors import ConfigError
from bench.trinity.system import batching, event_loop, workload
from bench.trinity.system.capture import Captured
from bench.trinity.system.engine import ExtendEngine
from bench.trinity.system.visited import HashVisited, hash_bytes_per_slot

from . import reference

CLASSES = [{"k": 10, "top_m": 16}, {"k": 10, "top_m": 32}, {"k": 20, "top_m": 24}]
SYNC_CALLS = {"item", "tolist", "cpu", "numpy", "nonzero", "argwhere", "masked_select", "unique",
              "unique_consecutive", "__bool__", "__int__", "__float__", "__index__", "__len__"}


def _search(engine, queries, n=24, seed=1, policy="continuous"):
    """{rid: (ids, extends, tasks, steps)} of n mixed requests all waiting at t=0."""
    src = workload.Source(workload.parse_classes(CLASSES, "test"), n, seed)
    src.add_open_loop(np.zeros(n))
    done, _ = event_loop.run(event_loop.LiveAdapter(engine, queries), batching.make(policy, engine.S, 0.0), src)
    return {r.rid: (r.ids.tolist(), r.extends, r.steps) for r in done}


def _ids_extends(res):
    return {k: v[:2] for k, v in res.items()}


class _Log(TorchFunctionMode):
    """Every torch call: its name and the shapes of its tensor outputs."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", str(func))
        if name in ("__getitem__", "__setitem__") and any(
                isinstance(a, torch.Tensor) and a.dtype == torch.bool for a in _flat(args[1:2])):
            name += "[bool]"                                    # boolean indexing: a nonzero inside
        if name == "where" and len(args) == 1:
            name = "nonzero"
        self.calls.append((name, tuple(tuple(o.shape) for o in _flat([out]) if isinstance(o, torch.Tensor))))
        return out

    def syncs(self):
        return [c for c, _ in self.calls if c in SYNC_CALLS or c.endswith("[bool]")]


def _flat(xs):
    for x in xs:
        if isinstance(x, (tuple, list)):
            yield from _flat(x)
        else:
            yield x


def _fill(engine, queries, start):
    free = engine.n_free()
    if free:
        q = queries[np.arange(start, start + free) % len(queries)]
        engine.admit(q, [10] * free, [[16, 32, 24][i % 3] for i in range(free)], [None] * free)
    return start + free


def test_the_detector_sees_every_kind_of_host_synchronisation():
    t = torch.tensor([1, 0, 2])
    with _Log() as log:
        t[0].item(), t.tolist(), bool(t[0]), int(t[1]), float(t[2]), t.nonzero(), torch.nonzero(t), t.cpu()
        t[t > 0], torch.where(t > 0)
    assert log.syncs() == ["item", "tolist", "__bool__", "__int__", "__float__", "nonzero", "nonzero", "cpu",
                           "__getitem__[bool]", "nonzero"]


@pytest.mark.parametrize("visited", ["hash", "bitmap"])
def test_no_host_synchronisation_inside_an_extend(small, visited):
    e = ExtendEngine(small["base"], small["graph"], capacity=8, top_m_max=32, chunk=40, sync_every=4,
                     visited=visited, trace=True)
    nxt = _fill(e, small["queries"], 0)
    for i in range(40):
        with _Log() as log:
            fin = e.extend()
        if (i + 1) % 4:
            assert log.syncs() == [] and fin == [], f"extend {i} between sync points synchronised"
        else:
            assert "cpu" in log.syncs(), "a sync point reads the finish flags"
        nxt = _fill(e, small["queries"], nxt) if fin else nxt
        with _Log() as log:
            e._step()
        assert log.syncs() == [], "the captured part never synchronises"


@pytest.mark.parametrize("chunk,visited", [(40, "hash"), (64, "hash"), (None, "bitmap"), (40, "bitmap")])
def test_every_extend_has_the_same_shapes(small, chunk, visited):
    """The fixed shape (what a CUDA graph replays; on the CPU ``skip_idle`` may leave idle launches out)."""
    e = ExtendEngine(small["base"], small["graph"], capacity=8, p=2, top_m_max=32, chunk=chunk,
                     sync_every=1000, visited=visited, trace=True, skip_idle=False)
    seqs, nxt = [], 0
    for i in range(30):                       # occupancy varies: empty, refilled, fresh, finishing slots
        if i in (0, 3, 12):
            nxt = _fill(e, small["queries"], nxt)
        with _Log() as log:
            e.extend()
        seqs.append(log.calls)
        if i in (10, 20):
            e.sync()
    assert all(s == seqs[0] for s in seqs), "tensor shapes changed between extends"
    assert e.last_launches == -(-8 * 2 * 16 // e.lanes)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("visited", ["hash", "bitmap", "auto"])
def test_same_results_as_the_engine_before(small, p, visited):
    old = reference.ExtendEngine(small["base"], small["graph"], capacity=8, p=p, top_m_max=32, chunk=40, trace=True)
    new = ExtendEngine(small["base"], small["graph"], capacity=8, p=p, top_m_max=32, chunk=40, trace=True,
                       visited=visited)
    want, got = _search(old, small["queries"]), _search(new, small["queries"])
    assert got == want, "ids, extends and the distance tasks of every extend"
    assert int(new.vis.overflow.sum()) == 0


def test_hash_overflow_costs_distances_never_results(small):
    """A table far too small (resets and full buckets): the same ids and extends, more distance tasks."""
    old = reference.ExtendEngine(small["base"], small["graph"], capacity=8, top_m_max=32, trace=True)
    new = ExtendEngine(small["base"], small["graph"], capacity=8, top_m_max=32, trace=True, visited="hash",
                       visited_size=64, visited_ways=4)
    q = small["queries"][:8]
    for e in (old, new):
        e.admit(q, [10] * 8, [32] * 8, list(range(8)))
    want, got = {}, {}
    for e, out in ((old, want), (new, got)):
        while e.n_active():
            out.update((f.tag, f) for f in e.extend())
    assert int(new.vis.overflow.sum()) > 0, "the table overflowed"
    assert sorted(got) == sorted(want) == list(range(8))
    for tag in want:
        assert got[tag].ids.tolist() == want[tag].ids.tolist() and got[tag].extends == want[tag].extends
        assert got[tag].tasks >= want[tag].tasks
    assert sum(f.tasks for f in got.values()) > sum(f.tasks for f in want.values())


def _random_graph(n, degree, seed):
    rng = np.random.default_rng(seed)
    g = (np.arange(n)[:, None] + rng.choice(np.arange(1, n), size=degree, replace=False)[None, :]) % n
    return g.astype(np.int32)


@pytest.mark.parametrize("top_m,degree", [(16, 8), (64, 16)])
def test_visited_bytes_per_slot_do_not_depend_on_n(top_m, degree):
    rng = np.random.default_rng(0)
    sizes = {}
    for n in (1000, 50_000, 400_000):
        x = rng.random((n, 4), dtype=np.float32)
        g = _random_graph(n, degree, 1)
        for kind in ("hash", "auto", "bitmap"):
            sizes[kind, n] = ExtendEngine(x, g, capacity=2, top_m_max=top_m, visited=kind).visited_bytes_per_slot()
    hashed = {sizes["hash", n] for n in (1000, 50_000, 400_000)}
    assert len(hashed) == 1, "hash bytes per slot independent of N"
    assert all(sizes["auto", n] <= sizes["hash", n] for n in (1000, 50_000, 400_000)), "auto never larger"
    assert sizes["auto", 400_000] == sizes["hash", 400_000] < sizes["bitmap", 400_000]
    assert sizes["bitmap", 400_000] >= 400_000 // 8


def test_hash_table_layout_and_bytes():
    t = HashVisited(torch, slots=3, top_m=16, lanes=8, size=256, ways=16, device="cpu")
    assert t.bytes_per_slot() == hash_bytes_per_slot(256, 16)
    nbr = torch.tensor([[5, 9, 5, 7, 1, 2, 3, 4]] * 3)
    listed = torch.full((3, 16), -1)
    listed[1, 0] = 9                                     # in slot 1's top-M: never a new lane
    ok = t.admit(nbr, torch.ones(3, 8, dtype=torch.bool), listed)
    assert ok[0].tolist() == [True, True, False, True, True, True, True, True], "a repeated lane is dropped"
    assert ok[1].tolist()[1] is False
    assert not t.admit(nbr, torch.ones(3, 8, dtype=torch.bool), listed).any(), "all visited or listed"
    t.clear(torch.tensor([2]))
    assert t.admit(nbr, torch.ones(3, 8, dtype=torch.bool), torch.full((3, 16), -1))[2].sum() == 7


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_cpu_skips_the_launches_of_free_slots_with_the_same_results(small, policy):
    kw = dict(capacity=8, p=2, top_m_max=32, chunk=64, trace=True)      # chunk = 2 slots' lanes: 4 launches
    full = ExtendEngine(small["base"], small["graph"], skip_idle=False, **kw)
    skip = ExtendEngine(small["base"], small["graph"], **kw)
    assert skip.skip_idle and not full.skip_idle
    assert _search(skip, small["queries"], policy=policy) == _search(full, small["queries"], policy=policy)
    skip.admit(small["queries"][:3], [10] * 3, [16] * 3, list("abc"))
    assert skip.used.nonzero()[0].tolist() == [0, 1, 2], "the lowest free slots are filled first"
    skip.extend()
    assert skip.last_launches == 2 and full.last_launches == 4
    while skip.n_active():
        skip.extend()
    skip.extend()
    assert skip.last_launches == 0, "an engine of several launches with no request runs none"


def test_replay_counts_the_launches_of_its_busy_slots():
    """The replay's launch count follows the live engine's: the launches that cover its busy slots."""
    times = event_loop.TimeModel([(0, 1, 1.0), (0, 2, 2.0), (0, 4, 4.0)], 0)
    traces = {(q, 16): event_loop.Trace([5, 5, 5], np.arange(10)) for q in range(8)}
    rep = event_loop.ReplayAdapter(traces, 8, 64, times, slot_lanes=32)
    rep.admit([workload.Request(i, i, 10, 16, 0.0) for i in range(3)])
    assert rep.extend()[3] == 2, "3 busy slots x 32 lanes need 2 launches of 64"
    old = event_loop.ReplayAdapter(traces, 8, 64, times)
    old.admit([workload.Request(i, i, 10, 16, 0.0) for i in range(3)])
    assert old.extend()[3] == 1, "without slot_lanes: launches from the distance tasks (15 of 64)"
    fixed = event_loop.ReplayAdapter(traces, 8, 64, times, slot_lanes=32, fixed=True)
    fixed.admit([workload.Request(i, i, 10, 16, 0.0) for i in range(3)])
    assert fixed.extend()[3] == 4, "a replayed CUDA graph runs all 8 x 32 / 64 launches"


def test_sync_every_reports_later_with_the_same_results(small):
    base = _search(ExtendEngine(small["base"], small["graph"], capacity=8, top_m_max=32, trace=True),
                   small["queries"])
    e = ExtendEngine(small["base"], small["graph"], capacity=8, top_m_max=32, trace=True, sync_every=3)
    assert _search(e, small["queries"]) == base
    e.admit(small["queries"][:2], [10, 10], [16, 16], ["a", "b"])
    reported = [i for i in range(200) if e.extend()]
    assert reported and all((i + 1) % 3 == 0 for i in reported), "results come back at sync points only"
    assert e.n_active() == 0


def test_bad_engine_options(small):
    with pytest.raises(ConfigError, match="visited set must be"):
        ExtendEngine(small["base"], small["graph"], capacity=2, visited="tree")
    with pytest.raises(ConfigError, match="powers of two"):
        ExtendEngine(small["base"], small["graph"], capacity=2, visited="hash", visited_size=1000)
    with pytest.raises(ConfigError, match="sync_every"):
        ExtendEngine(small["base"], small["graph"], capacity=2, sync_every=-1)


class _NoGraphs:
    """A torch stand-in whose CUDA-graph capture fails: the engine's capture must fall back to eager."""

    class cuda:
        @staticmethod
        def Stream(device):
            raise RuntimeError("CUDA graphs unavailable here")

        @staticmethod
        def synchronize(device):
            pass


def test_capture_falls_back_to_eager(small):
    calls = []
    c = Captured(_NoGraphs, lambda: calls.append(1), torch.device("cuda"))
    assert c.mode == "eager" and "CUDA graphs unavailable here" in c.reason
    c()
    assert calls == [1]
    assert ExtendEngine(small["base"], small["graph"], capacity=2).mode == "eager"


def test_the_step_is_ready_to_run_when_the_capture_starts(small, monkeypatch):
    """A CUDA capture runs the step (its warm-up) inside the constructor: everything the step reads must be
    set before it. Without CUDA, a stand-in capture that runs the step at the same point (the H200 run of
    make gpu-check found ``skip_idle`` set after it, so every capture failed and the engine ran eager)."""
    import bench.trinity.system.engine as engine_mod

    class RunsAtOnce:
        def __init__(self, torch, fn, device, enabled=True):
            fn()
            self.fn, self.mode = fn, "cuda-graph"

        def __call__(self):
            self.fn()

    monkeypatch.setattr(engine_mod, "Captured", RunsAtOnce)
    kw = dict(capacity=8, p=2, top_m_max=32, chunk=40, trace=True, visited="hash")
    e = ExtendEngine(small["base"], small["graph"], skip_idle=False, **kw)
    assert e.mode == "cuda-graph"


@pytest.mark.gpu
@pytest.mark.parametrize("visited,sync_every", [("hash", 4), ("bitmap", 1), ("auto", 3)])
def test_cuda_graph_gives_the_cpu_results(small, visited, sync_every):
    kw = dict(capacity=8, p=2, top_m_max=32, chunk=40, trace=True, visited=visited)
    cpu = _search(ExtendEngine(small["base"], small["graph"], **kw), small["queries"], n=30)
    e = ExtendEngine(small["base"], small["graph"], device="cuda", sync_every=sync_every, **kw)
    assert e.mode == "cuda-graph", e._run.reason
    assert not e.skip_idle, "a captured graph replays every launch"
    assert _search(e, small["queries"], n=30) == cpu
    assert e.last_launches == e.launches
    assert _search(e, small["queries"], n=30, policy="static") == cpu, "replays after refills"


@pytest.mark.gpu
def test_cuda_eager_gives_the_cpu_results(small):
    kw = dict(capacity=8, top_m_max=32, trace=True, visited="hash")
    cpu = _search(ExtendEngine(small["base"], small["graph"], **kw), small["queries"])
    e = ExtendEngine(small["base"], small["graph"], device="cuda", cuda_graph=False, **kw)
    assert e.mode == "eager" and _search(e, small["queries"]) == cpu


@pytest.mark.gpu
def test_cuda_graph_extend_does_not_synchronise(small):
    e = ExtendEngine(small["base"], small["graph"], capacity=8, top_m_max=32, device="cuda", sync_every=8)
    _fill(e, small["queries"], 0)
    torch.cuda.synchronize()
    for _ in range(7):
        with _Log() as log:
            e.extend()
        assert log.syncs() == []
    assert torch.cuda.is_current_stream_capturing() is False
