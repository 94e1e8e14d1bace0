"""Verified, resumable, mirrorable downloads (``bench data fetch`` / ``bench data verify``).

- Streamed to ``<dest>.partial`` with a progress bar; an interrupted transfer resumes from the bytes
  already there (HTTP Range; a server that ignores Range restarts the file from zero).
- Verified against md5/sha256 where known and the exact size otherwise; a file that fails is moved
  aside to ``<dest>.rejected`` (kept for inspection, never used) and the error says so.
- Moved into place atomically (``os.replace``) only once verified.
- A mirror (a directory or a base URL) replaces every URL: ``https://host/a/b`` becomes
  ``<mirror>/host/a/b``, so one mirror can hold several hosts' files (air-gapped clusters).
- With no network, the error names the dataset, the file and how to supply a local copy.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable

import requests
from tqdm import tqdm

from ..core.base.atomic import write_text
from ..core.base.errors import ChecksumError, DownloadError
from . import registry
from .registry import RemoteFile, Source

CHUNK = 1 << 20


def resolve_url(url: str, mirror: str | os.PathLike | None) -> str:
    """The URL to fetch ``url`` from, given a mirror directory or base URL (or None)."""
    if not mirror:
        return url
    parts = urllib.parse.urlsplit(url)
    rel = f"{parts.netloc}{parts.path}"
    mirror = str(mirror)
    if "://" in mirror:
        return mirror.rstrip("/") + "/" + rel
    return Path(mirror, rel).resolve().as_uri()


def source_dir(source: Source, data_dir: str | os.PathLike) -> Path:
    """Where a source's files live: ``<data_dir>/raw/<id>/`` (ir_datasets sources: its home)."""
    root = Path(data_dir, "raw")
    return root / "ir_datasets" if source.irds_id else root / source.id


def _hash_file(path: Path, algo: str, limit: int | None = None) -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as fh:
        left = limit
        while True:
            chunk = fh.read(CHUNK if left is None else min(CHUNK, left))
            if not chunk:
                break
            h.update(chunk)
            if left is not None:
                left -= len(chunk)
    return h.hexdigest()


def check_file(path: Path, rf: RemoteFile) -> dict:
    """Verify a local file against what is known of it; returns its checksums. Raises ChecksumError."""
    if not path.exists():
        raise ChecksumError(f"{path}: missing")
    size = path.stat().st_size
    if rf.size is not None and size != rf.size:
        raise ChecksumError(f"{path}: size {size} B, expected {rf.size} B")
    info = {"path": str(path), "size": size}
    if rf.md5:
        got = _hash_file(path, "md5")
        if got != rf.md5:
            raise ChecksumError(f"{path}: md5 {got}, expected {rf.md5}")
        info["md5"] = got
    info["sha256"] = _hash_file(path, "sha256") if (rf.sha256 or size < (2 << 30)) else None
    if rf.sha256 and info["sha256"] != rf.sha256:
        raise ChecksumError(f"{path}: sha256 {info['sha256']}, expected {rf.sha256}")
    if rf.size is None and not (rf.md5 or rf.sha256):
        checked = _check_format_header(path)
        info["verified_by"] = ("format header (no published size or checksum)" if checked else
                               "nothing published to check against; an archive's contents are checked after unpacking")
    else:
        info["verified_by"] = "md5" if rf.md5 else ("sha256" if rf.sha256 else "size")
    return info


def _check_format_header(path: Path) -> bool:
    from . import formats

    ext = path.suffix.lstrip(".")
    if ext in formats.FORMATS:
        formats.read_vectors(path, ext, check_rows=False)
    elif ext == "biganngt":
        formats.read_groundtruth(path)
    else:
        return False
    return True


def _reject(path: Path) -> Path:
    bad = path.with_name(path.name + ".rejected")
    os.replace(path, bad)
    return bad


def _stream(url: str, dest: Path, rf: RemoteFile, desc: str, progress: bool) -> None:
    """Append the missing bytes of ``url`` to ``dest`` (a .partial file), resuming where it stops."""
    have = dest.stat().st_size if dest.exists() else 0
    want = rf.range_bytes
    if want is not None and have >= want:
        return
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme == "file":
        src = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
        if not src.exists():
            raise FileNotFoundError(src)
        total = src.stat().st_size if want is None else min(want, src.stat().st_size)
        with open(src, "rb") as fi, open(dest, "ab") as fo, \
                tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=desc, disable=not progress) as bar:
            fi.seek(have)
            while have < total:
                chunk = fi.read(min(CHUNK, total - have))
                if not chunk:
                    break
                fo.write(chunk)
                have += len(chunk)
                bar.update(len(chunk))
        return
    if scheme in ("http", "https"):
        headers = dict(rf.headers)
        end = "" if want is None else str(want - 1)
        if have or want is not None:
            headers["Range"] = f"bytes={have}-{end}"
        with requests.get(url, headers=headers, stream=True, timeout=(15, 60)) as r:
            if r.status_code == 416 and have:  # already complete
                return
            r.raise_for_status()
            mode = "ab"
            if have and r.status_code != 206:  # server ignored Range: start again
                have, mode = 0, "wb"
            total = r.headers.get("Content-Length")
            total = int(total) + have if total is not None else None
            with open(dest, mode) as fo, tqdm(total=total, initial=have, unit="B", unit_scale=True,
                                              desc=desc, disable=not progress) as bar:
                for chunk in r.iter_content(1 << 16):  # small chunks: an interruption loses little
                    if want is not None:
                        chunk = chunk[:max(0, want - have)]
                    fo.write(chunk)
                    have += len(chunk)
                    bar.update(len(chunk))
                    if want is not None and have >= want:
                        break
        return
    # ftp and others: urllib, no resume (the file restarts from zero).
    with urllib.request.urlopen(url, timeout=60) as r, open(dest, "wb") as fo:
        shutil.copyfileobj(r, fo, CHUNK)


def fetch_file(rf: RemoteFile, folder: Path, *, source_id: str, mirror=None, progress: bool = True) -> dict:
    """Fetch one file into ``folder/rf.path`` (skipped when already there and verified)."""
    dest = folder / rf.path
    if dest.exists():
        return check_file(dest, rf)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".partial")
    url = resolve_url(rf.url, mirror)
    try:
        _stream(url, part, rf, desc=f"{source_id}: {rf.path}", progress=progress)
    except (requests.RequestException, OSError, urllib.error.URLError) as exc:
        kept = part.stat().st_size if part.exists() else 0
        raise DownloadError(
            f"dataset {source_id!r}: could not fetch {rf.path} from {url} ({type(exc).__name__}: {exc}). "
            f"{kept} B kept in {part} and resumed on the next try. Without network, place a copy at "
            f"{dest} and run `bench data verify {source_id}`, or pass --mirror DIR (or the profile's "
            f"`mirror:`) with the file at DIR/{urllib.parse.urlsplit(rf.url).netloc}"
            f"{urllib.parse.urlsplit(rf.url).path}") from None
    if rf.crop_rows is not None:
        from .formats import crop_bin_header

        with open(part, "r+b") as fh:
            header = fh.read(8)
            fh.seek(0)
            fh.write(crop_bin_header(header, rf.crop_rows))
    try:
        info = check_file(part, rf)
    except ChecksumError as exc:
        bad = _reject(part)
        raise ChecksumError(f"dataset {source_id!r}: {exc}; the file was moved aside to {bad} "
                            f"and is not used") from None
    os.replace(part, dest)
    info["path"] = str(dest)
    return info


def _unpack(archive: Path, folder: Path) -> None:
    done = folder / f".{archive.name}.unpacked"
    if done.exists():
        return
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    write_text(done, "ok\n")


def fetch(source_id: str, data_dir: str | os.PathLike = "data", mirror=None, progress: bool = True) -> Path:
    """Fetch and verify every file of a source; returns its folder. Writes a verified marker."""
    src = registry.get(source_id)
    if not src.files:
        raise DownloadError(f"dataset {source_id!r} has nothing to fetch (it is generated locally)")
    folder = source_dir(src, data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    if src.irds_id and src.irds_id.startswith("msmarco-passage"):
        # ir_datasets migrates an unversioned folder by deleting collection.tsv: declare v2 first.
        version = folder / "msmarco-passage" / "irds_version.txt"
        if not version.exists():
            version.parent.mkdir(parents=True, exist_ok=True)
            write_text(version, "v2")
    infos = [fetch_file(rf, folder, source_id=source_id, mirror=mirror, progress=progress) for rf in src.files]
    if src.archive:
        _unpack(folder / src.archive, folder)
        # An archive without a published checksum (SIFT1M's) is checked through what it holds: every
        # declared vector file must exist and agree with its format (size vs rows, header).
        for rel in (src.base, src.queries, src.groundtruth):
            if rel:
                p = folder / rel
                if not p.exists():
                    raise ChecksumError(f"dataset {source_id!r}: {src.archive} does not contain {rel}")
                _check_format_header(p)
    marker = marker_path(src, data_dir)
    write_text(marker, json.dumps({"source": source_id, "files": infos}, indent=2) + "\n")
    return folder


def marker_path(src: Source, data_dir) -> Path:
    return Path(data_dir, "raw", ".verified", src.id.replace("/", "__") + ".json")


def verify(source_id: str, data_dir: str | os.PathLike = "data") -> list[dict]:
    """Check every file of a source on disk; raises ChecksumError naming the first bad file."""
    src = registry.get(source_id)
    folder = source_dir(src, data_dir)
    return [check_file(folder / rf.path, rf) for rf in src.files]
