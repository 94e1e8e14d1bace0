"""Shared test fixtures. Tests run offline, on the CPU, and never read ../shared.

Tests measure nothing, so the step skeleton's quiet-machine waits, samples and reruns are off
(``BENCH_QUIET=off``, bench.core.measuring.quiet.checks_on): a test calling ``execute`` does not wait up to
20 s for other jobs to stop. A test of that logic itself takes the ``quiet_checks`` fixture, which turns them
back on.

``--study NAME`` selects one study's checks: every test parametrized by study runs for NAME only, the tests of
other studies' folders (``tests/<other>/``) are deselected, and every check that is not about one study (the
profiles, the generated rules, the orders, core naming no study) still runs. So
``pytest tests/test_contract.py tests/NAME --study NAME`` is the contract for a new study, profile-wide
checks included."""
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
