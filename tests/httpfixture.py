"""A small HTTP file server on 127.0.0.1 for download tests: Range requests, and faults
(drop the connection after N bytes, ignore Range). Bounded: it serves only the test's folder and
stops with the test."""
from __future__ import annotations

import contextlib
import http.server
import re
import threading
from pathlib import Path


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        srv = self.server.ctl
        srv.requests.append({"path": self.path, "range": self.headers.get("Range")})
        f = srv.root / self.path.lstrip("/")
        if not f.is_file():
            self.send_error(404)
            return
        data = f.read_bytes()
        start, end = 0, len(data) - 1
        rng = self.headers.get("Range")
        m = re.match(r"bytes=(\d+)-(\d*)", rng or "")
        if m and not srv.faults.get("ignore_range"):
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) else end
            if start >= len(data):
                self.send_response(416)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:end + 1]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = srv.faults.pop("drop_after", None)
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.connection.shutdown(2)  # an interrupted transfer
            return
        self.wfile.write(body)


class Server:
    def __init__(self, root: Path):
        self.root = root
        self.requests: list[dict] = []
        self.faults: dict = {}
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.ctl = self
        self.port = self.httpd.server_address[1]

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


@contextlib.contextmanager
def serve(root: Path):
    root.mkdir(parents=True, exist_ok=True)
    srv = Server(root)
    t = threading.Thread(target=srv.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()
        t.join(timeout=5)
