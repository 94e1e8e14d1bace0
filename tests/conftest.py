"""Shared test fixtures. Tests run offline, on the CPU, and never read ../shared.

Tests measure nothing, so the step skeleton's quiet-machine waits, samples and reruns are off
(``BENCH_QUIET=off``, bench.core.measuring.quiet.checks_on): a test calling ``execute`` does not wait up to
20 s for other jobs to stop. A test of that logic itself takes the ``quiet_checks`` fixture, which turns them
back on.

``--study NAME`` selects one study's checks: every test parametrized by study runs for NAME only, the tests of
other studies' folders (``tests/<other>/``) are deselected, and every check that is not about one study (the
profiles, the generated rules, the orders, core naming no study) still runs. So
``pytest tests/test_contract.py tests/NAME --study NAME`` is the contract for a new study, profile-wide
checks included.

``make test`` runs the suite in two passes: the tests that measure nothing on two workers (pytest-xdist), then
the ``serial`` ones alone (``pytest -m serial``). A test is serial when a second job beside it would change
what it checks: a live service timed from its intended send times, a load generator, the quiet-machine
checks, memory or CPU sampling against a deadline, a rendezvous or a cgroup with a timeout. The ``network``
marker, the ``quiet_checks`` fixture and the files in ``SERIAL`` make a test serial (``serial_reason``)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("BENCH_STRICT_FIGURES", "1")  # a legend covering data fails a figure test
os.environ.setdefault("BENCH_QUIET", "off")   # no quiet-machine waits or reruns: tests measure nothing


# files whose tests time something live, sample the machine against a deadline, or wait on a timeout
SERIAL = {
    "tests/serving": "load generators timed against a live service",
    "tests/windve/test_service.py": "a live service's admission and dispatch times",
    "tests/windve/test_openloop.py": "open-loop latency from the intended send times",
    "tests/windve/test_process.py": "a service process started and stopped against a timeout",
    "tests/windve/test_clients.py": "clients against a live service",
    "tests/windve/test_tei_routes.py": "a live service's routes",
    "tests/loaders/test_train.py": "training runs watched for hangs against a timeout",
    "tests/loaders/test_torchrun.py": "a two-node rendezvous against a timeout",
    "tests/loaders/test_footprint.py": "memory sampled against a deadline",
    "tests/core/test_cgroups.py": "cgroup statistics read against a deadline",
    "tests/core/test_sequential.py": "quiet-machine checks",
    "tests/core/test_measure.py": "repeats timed and watched for other work",
    "tests/core/test_processes.py": "fresh processes timed per step",
    "tests/espn/test_slow_devices.py": "an emulated device's added latency",
    "tests/chameleon/test_nodes.py": "memory nodes answering over sockets",
}


def serial_reason(item) -> str | None:
    """Why ``item`` must run with nothing beside it, or None when it measures nothing."""
    if item.get_closest_marker("network") is not None:
        return "talks to a live local server"
    if "quiet_checks" in getattr(item, "fixturenames", ()):
        return "quiet-machine checks read the machine's load"
    rel = Path(str(item.path)).resolve().relative_to(REPO).as_posix() if REPO in Path(str(item.path)).resolve().parents else ""
    return next((why for prefix, why in SERIAL.items() if rel == prefix or rel.startswith(prefix + "/")), None)


def pytest_addoption(parser):
    parser.addoption("--study", metavar="NAME", default=None,
                     help="one study's checks: its own and every profile-wide one (tests/conftest.py)")


def _interpreter_without_cuda() -> None:
    """Without CUDA, Triton's interpreter is switched on before anything imports Triton (Triton reads the
    setting when its language is imported), so the GPU kernels' tests run them on the CPU. The studies use
    a kernel on the CPU only when asked to (``bench.ann.kernels``), so no other test changes."""
    from bench.core.machine import devices

    if not devices.cuda_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")
        try:    # imported now, in interpreter mode, before a test switches the setting off for a while
            import triton  # noqa: F401
        except ImportError:
            pass


_interpreter_without_cuda()


def pytest_collection_modifyitems(config, items):
    study = config.getoption("--study")
    if study:
        _select_study(config, items, study)
    for item in items:
        if serial_reason(item) is not None:
            item.add_marker(pytest.mark.serial)
        elif "figcache" in getattr(item, "fixturenames", ()):
            # one worker draws a study's figures once for all its tests (tests/figcache.py; --dist loadgroup)
            item.add_marker(pytest.mark.xdist_group(f"{Path(str(item.path)).parent.name}-figures"))
    from bench.core.machine import devices

    if devices.cuda_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (none on this machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:   # the marker, not a keyword (a parameter id "gpu" is one)
            item.add_marker(skip)


def _select_study(config, items, study: str) -> None:
    """Keep the checks of ``study`` and every check that is about no single study (see the module docstring)."""
    from bench.core.declaring.discover import study_names

    known = study_names()
    if study not in known:
        raise pytest.UsageError(f"--study {study}: no such study; known: {', '.join(known)}")
    others = {REPO / "tests" / s for s in known if s != study}
    keep, drop = [], []
    for item in items:
        param = getattr(getattr(item, "callspec", None), "params", {}).get("study")
        other_folder = any(parent in others for parent in Path(str(item.path)).parents)
        (drop if (param is not None and param != study) or other_folder else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def quiet_checks(monkeypatch):
    """The quiet-machine waits, samples and reruns on, for a test of that logic (they are off in tests)."""
    monkeypatch.setenv("BENCH_QUIET", "on")


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def http_server(tmp_path):
    """A local HTTP server on 127.0.0.1 serving files from a folder, with Range support and
    switchable faults. Yields an object with .url(name), .root, .requests and .faults."""
    from .httpfixture import serve

    with serve(tmp_path / "www") as srv:
        yield srv
