"""Shared test fixtures. Tests run offline, on the CPU, and never read ../shared."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("BENCH_STRICT_FIGURES", "1")  # a legend covering data fails a figure test


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
    from bench.core.machine import devices

    if devices.cuda_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (none on this machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:   # the marker, not a keyword (a parameter id "gpu" is one)
            item.add_marker(skip)


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
