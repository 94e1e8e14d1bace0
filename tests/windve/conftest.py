"""Fixtures of the WindVE tests: one MiniLM encoder per session, and the service running on
127.0.0.1 in a background thread (a real HTTP server), awaited until /health says ready (every instance
warm) and always stopped when the test ends.

The accelerator the service picks depends on the machine: the CUDA GPU where there is one (measured),
else the emulated one; tests compare with :data:`ACC`, never with a hard-coded name."""
from __future__ import annotations

import contextlib
import time
import urllib.error
import urllib.request

import pytest

from bench.core.machine import devices

from ..figcache import figcache, figure_guard  # noqa: F401  (each figure drawn once per session)

TEST_LAW = {"alpha": 0.002, "beta": 0.01}   # emulated accelerator law for the tests (s/query, s)
ACC = "cuda" if devices.cuda_available() else "emulated"   # the accelerator instance on this machine
ACC_SOURCE = "emulated" if ACC == "emulated" else "measured"


def wait_ready(url: str, timeout_s: float = 120.0) -> float:
    """Poll /health until 200 (503 while warming), as clients do; returns the seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except urllib.error.HTTPError as exc:
            assert exc.code == 503, exc.code
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.02)
    raise AssertionError(f"service at {url} not ready after {timeout_s} s")


@pytest.fixture(scope="session")
def recs(tmp_path_factory):
    """Synthetic records of a machine without a GPU (the accelerator emulated), written once per session;
    tests read them, never write beside them."""
    from . import synthetic

    return synthetic.write(tmp_path_factory.mktemp("windve_records"))


@pytest.fixture(scope="session")
def gpu_recs(tmp_path_factory):
    """The same from a GPU machine (the CUDA GPU measured)."""
    from . import synthetic

    return synthetic.write(tmp_path_factory.mktemp("windve_gpu_records"), acc="cuda")


@pytest.fixture(scope="session")
def encoder():
    from bench.windve.system.encoder import Encoder

    return Encoder()


@contextlib.contextmanager
def running(svc, wait: bool = True):
    """Serve ``svc`` on a free 127.0.0.1 port in a thread; yields the base URL once /health is 200 (at
    once with ``wait=False``); stops it on exit."""
    from bench.windve.system.app import make_app

    from ..aioserve import serve_app

    with serve_app(make_app(svc)) as url:
        if wait:
            wait_ready(url)
        yield url


@pytest.fixture
def serve_windve(encoder):
    """``serve_windve(**config)`` -> (url, service); every server started is stopped at teardown."""
    from bench.windve.system.service import EmbeddingService
    from bench.windve.system.service_config import ServiceConfig

    with contextlib.ExitStack() as stack:
        def start(**kw):
            kw.setdefault("emulate", "v100-xeon")
            kw.setdefault("emulated_alpha", TEST_LAW["alpha"])
            kw.setdefault("emulated_beta", TEST_LAW["beta"])
            svc = EmbeddingService(ServiceConfig(**kw), encoder=encoder)
            return stack.enter_context(running(svc)), svc
        yield start


def cosine(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
