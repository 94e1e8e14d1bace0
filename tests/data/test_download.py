"""Downloads against a local HTTP server on 127.0.0.1: a good file, a truncated one, a corrupted one,
an interrupted transfer that resumes, a prefix crop by Range, a mirror directory, no network."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from bench.core.base.errors import ChecksumError, DownloadError, UnknownDatasetError
from bench.data import download, formats, registry
from bench.data.registry import RemoteFile, Source

pytestmark = pytest.mark.network

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


@pytest.fixture
def fake_source(monkeypatch, http_server):
    """Register a source whose single file is served by the local server."""
    def make(name="f.bin", size=len(PAYLOAD), digest=md5(PAYLOAD), **kw):
        src = Source(id="test/remote", kind="vectors", description="test",
                     files=(RemoteFile(http_server.url(name), name, size=size, md5=digest, **kw),))
        monkeypatch.setitem(registry.SOURCES, src.id, src)
        return src
    return make


def test_good_file_is_fetched_verified_and_marked(tmp_path, http_server, fake_source):
    (http_server.root / "f.bin").write_bytes(PAYLOAD)
    fake_source()
    folder = download.fetch("test/remote", tmp_path, progress=False)
    assert (folder / "f.bin").read_bytes() == PAYLOAD
    marker = json.loads(download.marker_path(registry.get("test/remote"), tmp_path).read_text())
    assert marker["files"][0]["md5"] == md5(PAYLOAD)
    assert [i["verified_by"] for i in download.verify("test/remote", tmp_path)] == ["md5"]
    # a second fetch finds it verified and makes no request
    n = len(http_server.requests)
    download.fetch("test/remote", tmp_path, progress=False)
    assert len(http_server.requests) == n


def test_truncated_file_is_rejected_and_kept_aside(tmp_path, http_server, fake_source):
    (http_server.root / "f.bin").write_bytes(PAYLOAD[:1000])
    fake_source()
    with pytest.raises(ChecksumError, match="size 1000 B, expected 1048576 B"):
        download.fetch("test/remote", tmp_path, progress=False)
    folder = tmp_path / "raw" / "test/remote"
    assert not (folder / "f.bin").exists()
    assert (folder / "f.bin.partial.rejected").stat().st_size == 1000
    assert not download.marker_path(registry.get("test/remote"), tmp_path).exists()


def test_corrupted_file_fails_md5_and_is_not_used(tmp_path, http_server, fake_source):
    bad = bytearray(PAYLOAD)
    bad[12345] ^= 0xFF
    (http_server.root / "f.bin").write_bytes(bytes(bad))
    fake_source()
    with pytest.raises(ChecksumError, match="md5") as exc:
        download.fetch("test/remote", tmp_path, progress=False)
    assert "moved aside" in str(exc.value)
    assert not (tmp_path / "raw" / "test/remote" / "f.bin").exists()


def test_interrupted_transfer_resumes_with_range(tmp_path, http_server, fake_source):
    (http_server.root / "f.bin").write_bytes(PAYLOAD)
    fake_source()
    http_server.faults["drop_after"] = 300_000
    with pytest.raises(DownloadError, match="resumed on the next try"):
        download.fetch("test/remote", tmp_path, progress=False)
    part = tmp_path / "raw" / "test/remote" / "f.bin.partial"
    kept = part.stat().st_size
    assert 0 < kept < len(PAYLOAD)
    download.fetch("test/remote", tmp_path, progress=False)
    assert http_server.requests[-1]["range"] == f"bytes={kept}-"
    assert (tmp_path / "raw" / "test/remote" / "f.bin").read_bytes() == PAYLOAD
    assert not part.exists()


def test_server_ignoring_range_restarts_the_file(tmp_path, http_server, fake_source):
    (http_server.root / "f.bin").write_bytes(PAYLOAD)
    fake_source()
    folder = tmp_path / "raw" / "test/remote"
    folder.mkdir(parents=True)
    (folder / "f.bin.partial").write_bytes(b"garbage")
    http_server.faults["ignore_range"] = True
    download.fetch("test/remote", tmp_path, progress=False)
    assert (folder / "f.bin").read_bytes() == PAYLOAD


def test_prefix_crop_by_range_rewrites_header(tmp_path, http_server, monkeypatch):
    x = np.arange(50 * 4, dtype=np.uint8).reshape(50, 4)
    formats.write_bin(http_server.root / "base.u8bin", x)
    n = 10
    src = Source(id="test/crop", kind="vectors", description="crop", files=(RemoteFile(
        http_server.url("base.u8bin"), "base.10.u8bin", size=8 + n * 4, range_bytes=8 + n * 4, crop_rows=n),))
    monkeypatch.setitem(registry.SOURCES, src.id, src)
    folder = download.fetch("test/crop", tmp_path, progress=False)
    assert http_server.requests[-1]["range"] == f"bytes=0-{8 + n * 4 - 1}"
    np.testing.assert_array_equal(formats.read_bin(folder / "base.10.u8bin"), x[:n])


def test_mirror_directory_replaces_every_url(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "example.org" / "data").mkdir(parents=True)
    (mirror / "example.org" / "data" / "f.bin").write_bytes(PAYLOAD)
    src = Source(id="test/mirrored", kind="vectors", description="m", files=(
        RemoteFile("https://example.org/data/f.bin", "f.bin", size=len(PAYLOAD), md5=md5(PAYLOAD)),))
    monkeypatch.setitem(registry.SOURCES, src.id, src)
    folder = download.fetch("test/mirrored", tmp_path / "data", mirror=mirror, progress=False)
    assert (folder / "f.bin").read_bytes() == PAYLOAD
    assert download.resolve_url("https://h.org/a/b.x", "http://m.local/base/") == "http://m.local/base/h.org/a/b.x"


def test_mirror_base_url(tmp_path, http_server, monkeypatch):
    (http_server.root / "example.org").mkdir()
    (http_server.root / "example.org" / "f.bin").write_bytes(PAYLOAD)
    src = Source(id="test/mirror-url", kind="vectors", description="m", files=(
        RemoteFile("https://example.org/f.bin", "f.bin", size=len(PAYLOAD), md5=md5(PAYLOAD)),))
    monkeypatch.setitem(registry.SOURCES, src.id, src)
    download.fetch("test/mirror-url", tmp_path, mirror=http_server.url(""), progress=False)
    assert http_server.requests[-1]["path"] == "/example.org/f.bin"


def test_no_network_error_names_dataset_file_and_how_to_supply_a_copy(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    src = Source(id="test/offline", kind="vectors", description="o", files=(
        RemoteFile(f"http://127.0.0.1:{port}/base.fvecs", "base.fvecs", size=10),))
    monkeypatch.setitem(registry.SOURCES, src.id, src)
    with pytest.raises(DownloadError) as exc:
        download.fetch("test/offline", tmp_path, progress=False)
    msg = str(exc.value)
    assert "'test/offline'" in msg and "base.fvecs" in msg
    assert "place a copy at" in msg and "--mirror" in msg


def test_verify_reports_a_bad_local_copy(tmp_path, monkeypatch):
    src = Source(id="test/local", kind="vectors", description="l", files=(
        RemoteFile("http://127.0.0.1:9/x.bin", "x.bin", size=4, md5=md5(b"abcd")),))
    monkeypatch.setitem(registry.SOURCES, src.id, src)
    folder = tmp_path / "raw" / "test/local"
    folder.mkdir(parents=True)
    (folder / "x.bin").write_bytes(b"abce")
    with pytest.raises(ChecksumError, match="md5"):
        download.verify("test/local", tmp_path)
    (folder / "x.bin").write_bytes(b"abcd")
    assert download.verify("test/local", tmp_path)[0]["md5"] == md5(b"abcd")


def test_unknown_dataset_lists_known_ids():
    with pytest.raises(UnknownDatasetError) as exc:
        registry.get("sift2m")
    assert "sift1m" in str(exc.value) and "deep-10m" in str(exc.value)


def test_cli_fetch_and_verify_against_a_local_mirror(tmp_path, repo):
    """`bench data fetch --mirror` and `bench data verify` on a registered id (bigann-1m's query file
    layout), with the mirror holding small files under <host>/<path>."""
    src = registry.get("deep-1m")
    mirror = tmp_path / "mirror"
    data = tmp_path / "data"
    # Fill the mirror with files of the right sizes (zeros are valid float32 vectors; the query file
    # header must say 10,000 x 96). The base crop is fetched by Range from a larger file.
    for rf in src.files:
        from urllib.parse import urlsplit

        u = urlsplit(rf.url)
        p = mirror / u.netloc / u.path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        rows = (rf.size - 8) // (96 * 4)
        with open(p, "wb") as fh:
            np.array([rows if rf.crop_rows is None else 10 * rows, 96], dtype="<u4").tofile(fh)
            fh.truncate(8 + (rows if rf.crop_rows is None else rows + 5) * 96 * 4)
    env_cmd = [sys.executable, "-m", "bench", "data"]
    r = subprocess.run(env_cmd + ["fetch", "deep-1m", "--data-dir", str(data), "--mirror", str(mirror),
                                  "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(env_cmd + ["verify", "deep-1m", "--data-dir", str(data)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("ok ") == 2
    base = formats.read_bin(data / "raw" / "deep-1m" / "base.1m.fbin")
    assert base.shape == (1_000_000, 96)
    r = subprocess.run(env_cmd + ["verify", "nope"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown dataset id 'nope'" in r.stderr


def test_archive_is_unpacked_and_its_files_checked(tmp_path, http_server, monkeypatch):
    import io
    import tarfile

    def tar_with(base_bytes):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for name, data in (("s/base.fvecs", base_bytes), ("s/query.fvecs", q.read_bytes())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    b = formats.write_vecs(tmp_path / "b.fvecs", np.ones((20, 4), np.float32))
    q = formats.write_vecs(tmp_path / "q.fvecs", np.ones((3, 4), np.float32))
    (http_server.root / "good.tar.gz").write_bytes(tar_with(b.read_bytes()))
    (http_server.root / "bad.tar.gz").write_bytes(tar_with(b.read_bytes()[:-5]))
    for name in ("good", "bad"):
        src = Source(id=f"test/{name}", kind="vectors", description="a", archive=f"{name}.tar.gz",
                     files=(RemoteFile(http_server.url(f"{name}.tar.gz"), f"{name}.tar.gz"),),
                     base="s/base.fvecs", queries="s/query.fvecs")
        monkeypatch.setitem(registry.SOURCES, src.id, src)
    folder = download.fetch("test/good", tmp_path / "d", progress=False)
    assert formats.read_vecs(folder / "s" / "base.fvecs").shape == (20, 4)
    from bench.core.base.errors import DataFormatError

    with pytest.raises(DataFormatError, match="not a multiple of the row size"):
        download.fetch("test/bad", tmp_path / "d", progress=False)
    assert not download.marker_path(registry.get("test/bad"), tmp_path / "d").exists()
