"""Start the processes of one training run (Moving Stuff Around, section 2.1): the DP process or one
process per DDP rank, sample their memory from outside, and make sure none outlives the run.

Start method: ``forkserver``, on every device. A process that has run torch (its OpenMP pool, autograd's
threads, a CUDA context) cannot be forked safely: the child may crash in ``backward`` or hang, and CUDA
refuses to start in it. So the ranks are forked from a server process that has imported torch, the
loaders and transformers (:mod:`.rank_imports`, preloaded once) but never run them, and no launcher here
uses ``fork``. The launcher's environment, as it is when a run starts, is applied in each rank. A rank's
start-up (from ``start()`` to the first line of its body: the fork from the server, unpickling its
arguments) is timed apart as ``startup_s`` and never enters samples/s or the step timings.
Memory: a rank shares the preloaded modules' pages with the server (outside the measured tree), as a
forked rank shared them with the launcher, so the tree's PSS counts its share of them only.

A rank that dies ends the run at once: the others (and every DataLoader worker) are killed, and
:class:`RankFailed` names the rank and its error; a run past its time limit raises :class:`RankTimeout`.
Under a memory cap, a rank killed by the cgroup's OOM killer makes an ``oom`` outcome (the paper's OOM
cells), not an error. Nothing is written here: a failed run leaves no record.
"""
from __future__ import annotations

import dataclasses
import functools
import multiprocessing as mp
import os
import signal
import socket
import tempfile
import time
from multiprocessing.connection import wait

import psutil

from ...core.base.errors import BenchError
from . import footprint, train
from .bert_cat import load_tokenizer
from .errors import OutOfMemory, RankFailed, RankTimeout


@dataclasses.dataclass
class Outcome:
    status: str                      # "ok" or "oom"
    results: list[dict]              # one per rank (empty for oom)
    samples: list[dict]              # memory readings of the process tree
    wall_s: float
    cap: dict = dataclasses.field(default_factory=dict)
    error: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


START_METHOD = "forkserver"
PRELOAD = ["bench.loaders.system.rank_imports"]


def context():
    """The multiprocessing context of every run process (see the module docstring)."""
    ctx = mp.get_context(START_METHOD)
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start_server() -> float:
    """Start the forkserver now and wait until it has imported :data:`PRELOAD` (one no-op process goes
    through it), so that no rank's start-up includes it; the seconds it took (about 0 when it ran)."""
    ctx = context()
    t0 = time.monotonic()
    p = ctx.Process(target=_noop, name="bench-loaders-warm")
    p.start()
    p.join()
    return time.monotonic() - t0


def _noop() -> None:
    pass


def preload(model_dir: str | os.PathLike | None = None) -> float:
    """Before the runs of a step: check the saved tokenizer, and start the server the run processes are
    forked from (:func:`start_server`; it imports torch, transformers and the loaders once, so that ranks
    start at once). The server's start-up seconds (0 when it was running)."""
    if model_dir is not None:
        load_tokenizer(model_dir)
    return start_server()


def server_pids() -> set[int]:
    """The pids of the forkserver and of multiprocessing's resource tracker (children of this process
    that outlive the runs), for tests that look for processes left behind."""
    from multiprocessing import forkserver, resource_tracker

    pids = {getattr(forkserver._forkserver, "_forkserver_pid", None),
            getattr(resource_tracker._resource_tracker, "_pid", None)}
    return {p for p in pids if p}


def _entry(body, rank, conn, cap_path, environ, t_started):
    """Body of a run process: take the launcher's environment, join the memory cap, run, send the result
    (or the error) back; a dict result gets ``startup_s``."""
    startup_s = time.monotonic() - t_started
    os.environ.clear()
    os.environ.update(environ)
    mp.set_start_method(None, force=True)  # the platform's default again, for DataLoader workers, as a user has it
    if cap_path:
        with open(os.path.join(cap_path, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        res = body()
        if isinstance(res, dict):
            res["startup_s"] = startup_s
        conn.send(("ok", rank or 0, res))
        code = 0
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the launcher
        try:
            conn.send(("error", rank or 0, exc if isinstance(exc, BenchError) else f"{type(exc).__name__}: {exc}"))
        except Exception:  # noqa: BLE001
            pass
        code = 1
    conn.close()
    os._exit(code)  # no atexit handlers of the server's modules


def kill_tree(procs) -> None:
    """SIGKILL the run processes and all their descendants (DataLoader workers included)."""
    victims = footprint.tree([p.pid for p in procs if p.pid])
    for v in victims:
        try:
            v.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    for p in procs:
        p.join(timeout=5)


def _collect(procs, conns, deadline, grace_s: float = 1.0) -> tuple[dict, list[tuple[int, object]]]:
    """Results by rank, and failures (rank, error or exit code). After the first failure, others are
    gathered for ``grace_s`` more, and a rank that died (an exit code) is listed before the errors the
    survivors then raise (a closed connection), so the report names the cause (see ``_cause_first``)."""
    results, failures, open_conns = {}, [], dict(enumerate(conns))
    stop = deadline
    while len(results) + len(failures) < len(procs) and time.monotonic() < stop:
        left = stop - time.monotonic()
        ready = wait(list(open_conns.values()) + [p.sentinel for p in procs], timeout=min(max(left, 0), 0.5))
        for i, c in list(open_conns.items()):
            if c in ready:
                try:
                    status, rank, payload = c.recv()
                except EOFError:
                    del open_conns[i]
                    continue
                del open_conns[i]
                (results.__setitem__(rank, payload) if status == "ok" else failures.append((rank, payload)))
        for r, p in enumerate(procs):
            if p.exitcode not in (None, 0) and r not in results and r not in [f[0] for f in failures]:
                if r in open_conns and open_conns[r].poll():
                    continue  # its error message is still to be read
                failures.append((r, p.exitcode))
        if failures:
            stop = min(stop, time.monotonic() + grace_s)
    if not failures and len(results) < len(procs):
        raise TimeoutError
    failures.sort(key=_cause_first)
    return results, failures


def _cause_first(failure: tuple[int, object]) -> tuple[int, int]:
    """Sort key: a rank that died, then bad input (the lowest rank, since every rank reads the same
    input and which one reports first is a race), then other errors in the order they came."""
    rank, err = failure
    if isinstance(err, int):
        return (0, 0)
    return (1, rank) if isinstance(err, BenchError) else (2, 0)


def run_processes(bodies, *, what: str, timeout_s: float = 300.0, cap_bytes: int | None = None,
                  sample_interval_s: float = 0.1, per_process: bool = False, check=None) -> Outcome:
    """Start one process per ``bodies[i]`` (a picklable no-argument callable returning a picklable result)
    and sample the memory of their tree until all have answered (``check``: the hook of the smaps check, see
    :class:`footprint.Sampler`); see the module docstring for failures."""
    ctx = context()
    cap = footprint.MemoryCap(cap_bytes) if cap_bytes else None
    t0 = time.monotonic()
    with (cap or _Null()):
        pipes = [ctx.Pipe(duplex=False) for _ in bodies]
        env = dict(os.environ)
        procs = [ctx.Process(target=_entry, args=(b, r, w, str(cap.path) if cap else None, env, time.monotonic()),
                             name=f"bench-loaders-{r}") for r, (b, (_, w)) in enumerate(zip(bodies, pipes))]
        for p in procs:
            p.start()
        for _, w in pipes:
            w.close()
        try:
            with footprint.Sampler([p.pid for p in procs], sample_interval_s, per_process=per_process,
                                   check=check) as sampler:
                results, failures = _collect(procs, [r for r, _ in pipes], t0 + timeout_s)
        except TimeoutError:
            kill_tree(procs)
            raise RankTimeout(f"{what} did not finish within {timeout_s:.0f} s; every rank was killed") from None
        finally:
            if any(p.exitcode is None for p in procs):
                kill_tree(procs)
        cap_stats = cap.stats() if cap else {}
    wall = time.monotonic() - t0
    for p in procs:
        p.join(timeout=5)
    if failures:
        rank, err = failures[0]
        if cap and (cap_stats.get("cap_oom_kills") or 0) > 0:
            return Outcome("oom", [], sampler.samples, wall, cap_stats,
                           error=f"rank {rank} OOM-killed under a {cap_bytes / 2**20:.0f} MiB cap")
        if isinstance(err, BenchError):
            raise type(err)(f"rank {rank}: {err}")
        how = f"exit code {err}" if isinstance(err, int) else err
        raise RankFailed(f"{what}: rank {rank} failed ({how}); the other ranks were stopped")
    return Outcome("ok", [results[i] for i in sorted(results)], sampler.samples, wall, cap_stats)


def launch(spec: train.RunSpec, *, timeout_s: float = 300.0, cap_bytes: int | None = None,
           sample_interval_s: float = 0.1, per_process: bool = False, check_memory: bool = True) -> Outcome:
    """Run ``spec`` (DP: one process; DDP: ``replicas`` ranks) and sample the memory of its tree, reading
    it as the ranks begin their measured steps (:func:`train.mark_measured`); ``check_memory``: after their
    last measured step every rank holds its memory until the sampler has read it with the smaps check
    (:func:`train.hold_for_check`)."""
    spec.check()
    if spec.parallel == "ddp" and not spec.port:
        spec = dataclasses.replace(spec, port=free_port())
    ranks = 1 if spec.parallel == "dp" else spec.replicas
    with tempfile.TemporaryDirectory(prefix="bench-check-") as phase_dir:
        spec = dataclasses.replace(spec, phase_dir=phase_dir, hold=check_memory)
        if spec.parallel == "dp":
            bodies = [functools.partial(train.run_dp, spec)]
        else:
            bodies = [functools.partial(train.run_rank, r, spec) for r in range(spec.replicas)]
        return run_processes(bodies, what=f"{spec.parallel} run of loader {spec.loader!r} with {spec.replicas} "
                             "replica(s)", timeout_s=timeout_s, cap_bytes=cap_bytes,
                             sample_interval_s=sample_interval_s, per_process=per_process,
                             check=_Held(phase_dir, ranks, check_memory))


@dataclasses.dataclass(frozen=True)
class _Held:
    """The sampler's side of :func:`train.mark_measured` and :func:`train.hold_for_check`: every rank has
    begun its measured steps (``measured.<rank>`` in the folder), every rank holds (``held.<rank>``), and the
    file ``checked`` lets them go on."""

    folder: str
    ranks: int
    hold: bool = True   # False: no rank holds, so the check is never due (the measured start still is)

    def _all(self, prefix: str) -> bool:
        try:
            return sum(n.startswith(prefix) for n in os.listdir(self.folder)) >= self.ranks
        except FileNotFoundError:
            return False

    def started(self) -> bool:
        return self._all("measured.")

    def ready(self) -> bool:
        return self.hold and self._all("held.")

    def release(self) -> None:
        try:
            open(os.path.join(self.folder, "checked"), "w").close()
        except FileNotFoundError:
            pass


def launch_fn(fn, *, timeout_s: float = 300.0, sample_interval_s: float = 0.1) -> Outcome:
    """One process running ``fn(None)`` (``fn`` picklable), its tree sampled per process."""
    return run_processes([functools.partial(fn, None)], what="loader process", timeout_s=timeout_s,
                         sample_interval_s=sample_interval_s, per_process=True)


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


__all__ = ["Outcome", "launch", "launch_fn", "run_processes", "kill_tree", "free_port", "context", "start_server",
           "preload", "server_pids", "OutOfMemory", "RankFailed", "RankTimeout"]
