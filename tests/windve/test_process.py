"""``bench windve serve`` as the measuring rules run it: started as a child, awaited on /health,
and stopped with nothing left behind, also when the measurement inside fails or the port is taken."""
from __future__ import annotations

import json
import socket
import urllib.request

import psutil
import pytest

from bench.core.base.errors import BenchError
from bench.windve.load import ServiceProcess
from bench.windve.system.service_config import free_port

from .conftest import ACC


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_service_process_serves_and_is_stopped_even_when_the_body_fails():
    port = free_port()
    args = ["--emulate", "v100-xeon", "--emulated-alpha", "0.001", "--emulated-beta", "0.0"]
    with pytest.raises(RuntimeError, match="measurement failed"):
        with ServiceProcess(args, port) as svc:
            pid = svc.proc.pid
            req = urllib.request.Request(svc.url + "/embed", data=json.dumps({"inputs": "hi"}).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                assert r.status == 200 and r.headers["x-device"] == ACC   # the GPU where there is one
            raise RuntimeError("measurement failed")
    assert _gone(pid)
    with socket.socket() as s:   # the port is free again (no listener left; TIME_WAIT allowed as servers do)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()


def test_port_in_use_fails_fast_with_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(BenchError, match="already in use"):
            with ServiceProcess([], port, start_timeout_s=60):
                pass
