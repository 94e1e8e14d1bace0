"""Registered dataset sources, each with a stable id (``bench data list``).

A source names the files to fetch (URL, size, md5/sha256 where known), how the base, query and
ground-truth sets are found in them, and any pitfall (a crop's ground truth). MS MARCO sources are
ir_datasets ids: their files and checksums come from ir_datasets' own download manifest, fetched by
our download layer (so mirrors, resume and verification apply), then read offline by ir_datasets.
Facts (URLs, sizes, checksums) are from the datasets' public documentation.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

from ..core.base.errors import UnknownDatasetError


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """One file of a source. ``range_bytes`` fetches only a prefix (a crop of a big-ann file)."""

    url: str
    path: str                      # relative path under data/raw/<source id>/ (or IR_DATASETS_HOME)
    size: int | None = None        # exact size in bytes, when known
    md5: str | None = None
    sha256: str | None = None
    range_bytes: int | None = None  # fetch only the first N bytes (HTTP Range)
    crop_rows: int | None = None    # rewrite the big-ann header's n to this (with range_bytes)
    headers: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Source:
    id: str
    kind: str                      # "vectors" or "text"
    description: str
    files: tuple[RemoteFile, ...] = ()
    dim: int | None = None
    dtype: str | None = None       # u8 / f32
    metric: str = "l2"
    n_base: int | None = None
    n_query: int | None = None
    base: str | None = None        # path of the base file (relative to the source folder), fmt by ext
    queries: str | None = None
    groundtruth: str | None = None  # None: recomputed exactly
    archive: str | None = None     # a tar.gz to unpack after download
    irds_id: str | None = None     # ir_datasets id for text sources
    synthetic: bool = False
    pitfalls: str = ""
    needs_network: bool = True


BIGANN = "https://dl.fbaipublicfiles.com/billion-scale-ann-benchmarks"
DEEP = "https://storage.yandexcloud.net/yandex-research/ann-datasets/DEEP"
TEXMEX = "ftp://ftp.irisa.fr/local/texmex/corpus"
CROPS = {"1m": 1_000_000, "10m": 10_000_000, "100m": 100_000_000, "1b": 1_000_000_000}
PUBLISHED_GT = {
    ("bigann", "10m"): f"{BIGANN}/GT_10M/bigann-10M", ("bigann", "100m"): f"{BIGANN}/GT_100M/bigann-100M",
    ("bigann", "1b"): f"{BIGANN}/bigann/GT.public.1B.ibin",
    ("deep", "10m"): f"{BIGANN}/GT_10M/deep-10M", ("deep", "100m"): f"{BIGANN}/GT_100M/deep-100M",
}


# family: (base URL of the 1B file, query file URL, query size, dim, item bytes, dtype, base ext)
FAMILIES = {
    "bigann": (f"{BIGANN}/bigann/base.1B.u8bin", f"{BIGANN}/bigann/query.public.10K.u8bin", 1_280_008,
               128, 1, "u8", "u8bin", "BIGANN (SIFT1B)"),
    "deep": (f"{DEEP}/base.1B.fbin", f"{DEEP}/query.public.10K.fbin", 3_840_008,
             96, 4, "f32", "fbin", "Deep1B (96-d float32)"),
}


def _crop_sources() -> list[Source]:
    """Prefix crops of the big-ann 1B files, fetched by HTTP Range with the header's n rewritten."""
    out = []
    for family, (base_url, query_url, query_size, dim, item, dtype, ext, title) in FAMILIES.items():
        for name, n in CROPS.items():
            gt_url = PUBLISHED_GT.get((family, name))
            nbytes = 8 + n * dim * item
            query = query_url.rsplit("/", 1)[1]
            files = [RemoteFile(base_url, f"base.{name}.{ext}", size=nbytes, range_bytes=nbytes, crop_rows=n),
                     RemoteFile(query_url, query, size=query_size)]
            if gt_url:
                files.append(RemoteFile(gt_url, f"gt.{name}.biganngt"))
            pitfall = (f"uses the ground truth published for exactly {n:,} vectors, never another size's"
                       if gt_url else "no published ground truth for this size: recomputed exactly")
            if family == "deep":
                pitfall += "; the ground truth beside base.1B is for the full set and is never paired with a crop"
            out.append(Source(
                id=f"{family}-{name}", kind="vectors", dim=dim, dtype=dtype, n_base=n, n_query=10_000,
                description=f"{title} prefix crop of {n:,} vectors", files=tuple(files),
                base=f"base.{name}.{ext}", queries=query,
                groundtruth=f"gt.{name}.biganngt" if gt_url else None, pitfalls=pitfall))
    return out


def _irds_source(id: str, description: str, download_keys: tuple[str, ...]) -> Source:
    return Source(id=id, kind="text", description=description, irds_id=id,
                  files=tuple(irds_files(id.split("/")[0], download_keys)),
                  pitfalls="MS MARCO data-use agreement applies")


def irds_files(group: str, keys: tuple[str, ...]) -> list[RemoteFile]:
    """Files of an ir_datasets dataset group, from ir_datasets' bundled downloads.json."""
    # Located without importing ir_datasets: it fixes its home folder at import time, and
    # bench.data.prepared.irds_load must set IR_DATASETS_HOME first.
    spec = importlib.util.find_spec("ir_datasets")
    if spec is None or spec.origin is None:  # pragma: no cover
        return []
    manifest = json.loads((Path(spec.origin).parent / "etc" / "downloads.json").read_text())
    out = []
    for key in keys:
        entry = manifest.get(group, {}).get(key)
        if entry is None:
            continue
        # ir_datasets reads a file from its cache_path when it has one, else from
        # <home>/downloads/<md5> (see bench.data.prepared.irds_load).
        path = f"{group}/{entry['cache_path']}" if "cache_path" in entry else f"downloads/{entry['expected_md5']}"
        out.append(RemoteFile(
            url=entry["url"], path=path,
            size=entry.get("size_hint"), md5=entry.get("expected_md5"),
            headers=tuple((entry.get("download_args") or {}).get("headers", {}).items())))
    return out


def _synthetic() -> list[Source]:
    return [
        Source("synthetic/sift-like", "vectors", "SIFT-like: 128-d uint8, clustered (generated from the seed)",
               dim=128, dtype="u8", synthetic=True, needs_network=False),
        Source("synthetic/deep-like", "vectors", "Deep-like: 96-d float32 unit norm, clustered (generated)",
               dim=96, dtype="f32", synthetic=True, needs_network=False),
        Source("synthetic/syn-512", "vectors", "Chameleon SYN-512: SIFT-like vectors replicated to 512 dims",
               dim=512, dtype="f32", synthetic=True, needs_network=False),
        Source("synthetic/syn-1024", "vectors", "Chameleon SYN-1024: SIFT-like vectors replicated to 1024 dims",
               dim=1024, dtype="f32", synthetic=True, needs_network=False),
        Source("synthetic/msmarco-like", "text",
               "MS MARCO-like passages and queries with planted graded qrels (generated)",
               synthetic=True, needs_network=False),
    ]


def _sources() -> dict[str, Source]:
    srcs = [
        Source("sift1m", "vectors", "SIFT1M (TEXMEX): 1M x 128 float descriptors, 10K queries, 100-NN ground truth",
               files=(RemoteFile(f"{TEXMEX}/sift.tar.gz", "sift.tar.gz"),),
               archive="sift.tar.gz", dim=128, dtype="f32", n_base=1_000_000, n_query=10_000,
               base="sift/sift_base.fvecs", queries="sift/sift_query.fvecs",
               groundtruth="sift/sift_groundtruth.ivecs",
               pitfalls="FTP only (no resume across servers that refuse REST); sift_base.fvecs must be 516,000,000 B"),
        *_crop_sources(),
        _irds_source("msmarco-passage", "MS MARCO passage collection (8,841,823 passages)",
                     ("collectionandqueries",)),
        _irds_source("msmarco-passage/dev/small", "MS MARCO passage dev/small: 6,980 queries, 7,437 qrels",
                     ("collectionandqueries",)),
        _irds_source("msmarco-passage/trec-dl-2019/judged", "TREC DL 2019 passage: 43 judged queries",
                     ("collectionandqueries", "trec-dl-2019/queries", "trec-dl-2019/qrels")),
        _irds_source("msmarco-passage/trec-dl-2020/judged", "TREC DL 2020 passage: 54 judged queries",
                     ("collectionandqueries", "trec-dl-2020/queries", "trec-dl-2020/qrels")),
        _irds_source("msmarco-document", "MS MARCO document collection (3,213,835 documents)", ("docs",)),
        _irds_source("msmarco-document/train", "MS MARCO document train: 367,013 queries",
                     ("docs", "train/queries", "train/qrels")),
        _irds_source("msmarco-document/dev", "MS MARCO document dev queries and qrels",
                     ("docs", "dev/queries", "dev/qrels")),
        *_synthetic(),
    ]
    return {s.id: s for s in srcs}


SOURCES = _sources()


def get(source_id: str) -> Source:
    try:
        return SOURCES[source_id]
    except KeyError:
        raise UnknownDatasetError(
            f"unknown dataset id {source_id!r}; known ids: {', '.join(sorted(SOURCES))} "
            f"(or declare a `source: user` dataset in the profile)") from None
