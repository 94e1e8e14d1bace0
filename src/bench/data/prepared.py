"""Prepared datasets: what the studies load.

``prepare(name, spec, ...)`` turns a dataset declared in a profile (a registered source, a synthetic
generator, or a user's files) into ``<data_dir>/<profile>/prepared/<name>/manifest.json`` plus any
files it needs (generated vectors, recomputed ground truth, a text subset). ``load_vectors`` and
``load_text`` read a manifest back.

Ground truth: a prefix crop (``n_base`` smaller than the source) gets exact ground truth recomputed
with faiss, unless the source publishes the matching crop's ground truth; a crop is never paired
with the full set's ground truth. A query prefix (``n_query``) takes the matching rows.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..core.base.atomic import write_text
from ..core.base.errors import ConfigError, DataFormatError
from . import formats, groundtruth, registry, synthetic, text
from .download import source_dir

SAMPLE = 64 << 20


def file_digest(path: str | os.PathLike) -> str:
    """sha256 of a file; above 1 GiB, of its size, first and last 64 MiB (prefixed 'sampled:')."""
    p = Path(path)
    size = p.stat().st_size
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        if size <= (1 << 30):
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
            return h.hexdigest()
        h.update(str(size).encode())
        h.update(fh.read(SAMPLE))
        fh.seek(size - SAMPLE)
        h.update(fh.read(SAMPLE))
    return "sampled:" + h.hexdigest()


@dataclasses.dataclass
class VectorDataset:
    name: str
    id: str
    base: np.ndarray
    queries: np.ndarray
    gt_ids: np.ndarray
    gt_dist: np.ndarray | None
    metric: str
    checksum: str

    @property
    def dim(self) -> int:
        return self.base.shape[1]


def _spec_seed(spec: Mapping[str, Any], seed: int, name: str) -> int:
    if "seed" in spec:
        return int(spec["seed"])
    return (seed + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)) % (2**31)


def _resolve(path: str, base_dir: Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base_dir / p).resolve()


def check_user_files(datasets: Mapping[str, Mapping[str, Any]], workdir: str | os.PathLike = ".") -> None:
    """When the profile is validated (before any job), what ``prepare`` would refuse of a declared
    ``source: user`` dataset, from the vector files' sizes and headers (they are memory-mapped, not read;
    ground truth, small, is read): a key it needs is missing; a vector or ground-truth file's size disagrees
    with its header or record length (a truncated copy: the message the first job would give, naming the
    file and both sizes); base and queries differ in dimension; ``n_base``/``n_query`` exceed the files;
    published ground truth has fewer rows than the queries or an id past the base. A missing file is left
    to Snakemake's missing-input message (it names the file and the rule)."""
    wd = Path(workdir)
    for name, spec in datasets.items():
        if spec.get("source") != "user":
            continue
        _check_user_keys(name, spec)
        if "collection" in spec:
            continue   # text: TSV/TREC files have no size to check against
        fmt, shapes = spec["format"], {}
        for key in ("base", "queries"):
            p = _resolve(spec[key], wd)
            if p.exists():
                shapes[key] = _checked(name, key, lambda: formats.read_vectors(p, fmt, check_rows=False).shape)
        if len(shapes) < 2:
            continue
        (nb, db), (nq_file, dq) = shapes["base"], shapes["queries"]
        if db != dq:
            raise DataFormatError(f"dataset {name!r}: base has dimension {db}, queries {dq}")
        n, nq = int(spec.get("n_base", nb)), int(spec.get("n_query", nq_file))
        if n > nb or nq > nq_file:
            raise ConfigError(f"dataset {name!r}: n_base/n_query ({n}/{nq}) exceed the files ({nb}/{nq_file})")
        g = _resolve(spec["groundtruth"], wd) if "groundtruth" in spec else None
        if g is not None and g.exists():
            ids = _checked(name, "groundtruth", lambda: formats.read_groundtruth(g)[0])
            if n == nb and ids.shape[0] < nq:   # a crop gets its ground truth recomputed: only the full set's is read
                raise DataFormatError(f"dataset {name!r} groundtruth: {g}: ground truth has {ids.shape[0]} rows, "
                                      f"{nq} queries")
            if n == nb and ids.size and int(ids.max()) >= nb:
                raise DataFormatError(f"dataset {name!r} groundtruth: {g}: ground truth id {int(ids.max())} >= "
                                      f"base size {nb}")


def _check_user_keys(name: str, spec: Mapping[str, Any]) -> None:
    """The keys a ``source: user`` dataset needs (vectors: format, base, queries; text: collection,
    queries, qrels); ``prepare`` and the validation before any job say the same."""
    if "collection" in spec:
        missing = [k for k in ("collection", "queries", "qrels") if k not in spec]
        if missing:
            raise ConfigError(f"dataset {name!r} (source: user, text): missing {', '.join(missing)}")
        return
    missing = [k for k in ("format", "base", "queries") if k not in spec]
    if missing:
        raise ConfigError(f"dataset {name!r} (source: user): missing {', '.join(missing)} "
                          f"(vector datasets need format, base, queries; text needs collection, queries, qrels)")


def _checked(name: str, key: str, read):
    try:
        return read()
    except DataFormatError as exc:
        raise DataFormatError(f"dataset {name!r} {key}: {exc}") from None


def prepare(name: str, spec: Mapping[str, Any], *, profile: str, data_dir: str | os.PathLike = "data",
            seed: int = 0, workdir: str | os.PathLike = ".") -> Path:
    """Prepare one dataset of a profile; returns its manifest path (written last, atomically)."""
    out = Path(data_dir, profile, "prepared", name)
    out.mkdir(parents=True, exist_ok=True)
    src_id = spec.get("source")
    if not src_id:
        raise ConfigError(f"dataset {name!r}: no 'source'")
    s = _spec_seed(spec, seed, name)
    if src_id == "user":
        manifest = _prepare_user(name, spec, out, Path(workdir))
    else:
        src = registry.get(src_id)
        if src.synthetic:
            manifest = (_prepare_synthetic_text if src.kind == "text" else _prepare_synthetic_vectors)(
                name, src, spec, out, s)
        elif src.kind == "vectors":
            manifest = _prepare_registered_vectors(name, src, spec, out, Path(data_dir))
        else:
            manifest = _prepare_irds_text(name, src, spec, out, Path(data_dir))
    manifest.update(name=name, source=src_id, seed=s,
                    created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    files = manifest.get("files", {})
    manifest["checksum"] = hashlib.sha256(json.dumps(
        {k: v.get("digest") for k, v in sorted(files.items())} | {"rows": manifest.get("n_base")},
        sort_keys=True).encode()).hexdigest()
    path = out / "manifest.json"
    write_text(path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def _file_entry(path: Path, fmt: str | None = None, rows: int | None = None) -> dict:
    entry = {"path": str(path.resolve()), "digest": file_digest(path)}
    if fmt:
        entry["format"] = fmt
    if rows is not None:
        entry["rows"] = int(rows)
    return entry


def _with_groundtruth(manifest: dict, base: np.ndarray, queries: np.ndarray, out: Path, k: int,
                      metric: str, published: Path | None = None) -> dict:
    if published is not None:
        ids, _ = formats.read_groundtruth(published)
        if ids.shape[0] < queries.shape[0]:
            raise DataFormatError(f"{published}: ground truth has {ids.shape[0]} rows, {queries.shape[0]} queries")
        if int(ids.max()) >= base.shape[0]:
            raise DataFormatError(f"{published}: ground truth id {int(ids.max())} >= base size {base.shape[0]}")
        manifest["files"]["groundtruth"] = _file_entry(published, rows=queries.shape[0])
        manifest["groundtruth_origin"] = "published"
        return manifest
    k = min(k, base.shape[0])
    ids, dist = groundtruth.exact_knn(base, queries, k, metric)
    gt = formats.write_groundtruth(out / "groundtruth.biganngt", ids, dist)
    manifest["files"]["groundtruth"] = _file_entry(gt, rows=queries.shape[0])
    manifest["groundtruth_origin"] = "recomputed exactly (faiss flat, by blocks)"
    return manifest


def _vector_manifest(kind_dtype: str, dim: int, n_base: int, n_query: int, metric: str, gt_k: int) -> dict:
    return {"kind": "vectors", "dtype": kind_dtype, "dim": dim, "n_base": n_base, "n_query": n_query,
            "metric": metric, "gt_k": gt_k, "files": {}}


def _prepare_synthetic_vectors(name, src, spec, out: Path, seed: int) -> dict:
    n, nq = int(spec.get("n_base", 10_000)), int(spec.get("n_query", 100))
    k = int(spec.get("gt_k", 100))
    clusters = int(spec.get("n_clusters", 200))
    metric = spec.get("metric", "l2")
    tiled = None
    if src.id == "synthetic/deep-like":
        xb, xq = synthetic.deep_like(n, seed, nq, n_clusters=clusters)
        fmt = "fbin"
    else:
        xb, xq = synthetic.sift_like(n, seed, nq, n_clusters=clusters)
        fmt = "u8bin"
        if src.id in ("synthetic/syn-512", "synthetic/syn-1024"):
            tiled = (xb, xq)
            xb, xq = synthetic.syn_replicate(xb, src.dim), synthetic.syn_replicate(xq, src.dim)
            fmt = "fbin"
    formats.write_bin(out / f"base.{fmt}", xb)
    formats.write_bin(out / f"query.{fmt}", xq)
    m = _vector_manifest("u8" if fmt == "u8bin" else "f32", xb.shape[1], n, nq, metric, k)
    m["files"]["base"] = _file_entry(out / f"base.{fmt}", fmt, n)
    m["files"]["queries"] = _file_entry(out / f"query.{fmt}", fmt, nq)
    if tiled is not None and metric == "l2":
        # SYN vectors are 128-d vectors tiled r times: squared L2 distances scale by r, so the exact
        # neighbours are those of the 128-d vectors (r times cheaper to compute).
        r = src.dim // tiled[0].shape[1]
        ids, dist = groundtruth.exact_knn(tiled[0], tiled[1], min(k, n), metric)
        gt = formats.write_groundtruth(out / "groundtruth.biganngt", ids, dist * r)
        m["files"]["groundtruth"] = _file_entry(gt, rows=nq)
        m["groundtruth_origin"] = "recomputed exactly on the 128-d vectors before tiling (faiss flat)"
        return m
    return _with_groundtruth(m, xb, xq, out, k, metric)


def _prepare_registered_vectors(name, src, spec, out: Path, data_dir: Path) -> dict:
    folder = source_dir(src, data_dir)
    base_p, query_p = folder / src.base, folder / src.queries
    for p in (base_p, query_p):
        if not p.exists():
            raise DataFormatError(f"dataset {name!r}: {p} is missing; run `bench data fetch {src.id}` first")
    full = formats.read_vectors(base_p, check_rows=False)
    n = int(spec.get("n_base", full.shape[0]))
    if n > full.shape[0]:
        raise ConfigError(f"dataset {name!r}: n_base={n} exceeds the {full.shape[0]} vectors of {src.id}")
    queries_all = formats.read_vectors(query_p)
    nq = int(spec.get("n_query", queries_all.shape[0]))
    if nq > queries_all.shape[0]:
        raise ConfigError(f"dataset {name!r}: n_query={nq} exceeds the {queries_all.shape[0]} queries of {src.id}")
    k = int(spec.get("gt_k", 100))
    metric = spec.get("metric", src.metric)
    m = _vector_manifest(src.dtype, full.shape[1], n, nq, metric, k)
    m["files"]["base"] = _file_entry(base_p, formats.format_of(base_p), n)
    m["files"]["queries"] = _file_entry(query_p, formats.format_of(query_p), nq)
    published = folder / src.groundtruth if (src.groundtruth and n == full.shape[0]) else None
    return _with_groundtruth(m, full[:n], queries_all[:nq], out, k, metric, published)


def _prepare_user(name, spec, out: Path, workdir: Path) -> dict:
    _check_user_keys(name, spec)
    if "collection" in spec:
        return _prepare_user_text(name, spec, workdir)
    fmt = spec["format"]
    base_p, query_p = _resolve(spec["base"], workdir), _resolve(spec["queries"], workdir)
    for what, p in (("base", base_p), ("queries", query_p)):
        if not p.exists():
            raise ConfigError(f"dataset {name!r}: {what} file {p} does not exist")
    xb = formats.read_vectors(base_p, fmt)
    xq = formats.read_vectors(query_p, fmt)
    if xb.shape[1] != xq.shape[1]:
        raise DataFormatError(f"dataset {name!r}: base has dimension {xb.shape[1]}, queries {xq.shape[1]}")
    n = int(spec.get("n_base", xb.shape[0]))
    nq = int(spec.get("n_query", xq.shape[0]))
    if n > xb.shape[0] or nq > xq.shape[0]:
        raise ConfigError(f"dataset {name!r}: n_base/n_query ({n}/{nq}) exceed the files ({xb.shape[0]}/{xq.shape[0]})")
    k, metric = int(spec.get("gt_k", 100)), spec.get("metric", "l2")
    m = _vector_manifest("u8" if xb.dtype == np.uint8 else str(xb.dtype), xb.shape[1], n, nq, metric, k)
    m["files"]["base"] = _file_entry(base_p, fmt, n)
    m["files"]["queries"] = _file_entry(query_p, fmt, nq)
    published = None
    if "groundtruth" in spec and n == xb.shape[0]:
        published = _resolve(spec["groundtruth"], workdir)
        if not published.exists():
            raise ConfigError(f"dataset {name!r}: groundtruth file {published} does not exist")
    return _with_groundtruth(m, xb[:n], xq[:nq], out, k, metric, published)


def _prepare_user_text(name, spec, workdir: Path) -> dict:
    paths = {k: _resolve(spec[k], workdir) for k in ("collection", "queries", "qrels")}
    ds = text.read_text_dataset(paths["collection"], paths["queries"], paths["qrels"], id=name)  # validates
    return {"kind": "text", "n_base": len(ds.doc_ids), "n_query": len(ds.query_ids),
            "files": {k: _file_entry(p) for k, p in paths.items()}}


def _write_text_files(ds: text.TextDataset, out: Path) -> dict:
    text.write_tsv_pairs(out / "collection.tsv", ds.doc_ids, ds.docs)
    text.write_tsv_pairs(out / "queries.tsv", ds.query_ids, ds.queries)
    text.write_qrels(out / "qrels.trec", ds.qrels)
    return {"kind": "text", "n_base": len(ds.doc_ids), "n_query": len(ds.query_ids),
            "n_empty_passages": len(ds.empty_doc_ids),
            "files": {"collection": _file_entry(out / "collection.tsv"),
                      "queries": _file_entry(out / "queries.tsv"),
                      "qrels": _file_entry(out / "qrels.trec")}}


def _prepare_synthetic_text(name, src, spec, out: Path, seed: int) -> dict:
    ds = synthetic.msmarco_like(int(spec.get("n_passages", 2000)), int(spec.get("n_query", 50)), seed,
                                n_topics=int(spec.get("n_topics", 50)),
                                vocab_size=int(spec.get("vocab_size", 5000)),
                                empty_passages=int(spec.get("empty_passages", 0)), id=name)
    return _write_text_files(ds, out)


def irds_load(irds_id: str, data_dir: Path):
    """Open an ir_datasets dataset from our download folder (files fetched by ``bench data fetch``)."""
    import sys

    home = str((data_dir / "raw" / "ir_datasets").resolve())
    if "ir_datasets" in sys.modules and os.environ.get("IR_DATASETS_HOME") != home:
        raise RuntimeError(f"ir_datasets was imported before IR_DATASETS_HOME was set to {home}; "
                           "it would read the wrong folder")
    os.environ["IR_DATASETS_HOME"] = home
    # Files without a cache_path are looked up at <home>/downloads/<md5> only above this size.
    os.environ["IR_DATASETS_SMALL_FILE_SIZE"] = "0"
    import ir_datasets

    return ir_datasets.load(irds_id)


def _prepare_irds_text(name, src, spec, out: Path, data_dir: Path) -> dict:
    """A subset of an ir_datasets collection: every judged passage of the (first n_query) queries,
    plus the first passages of the collection up to ``n_passages``; written as TSV + TREC qrels."""
    ds = irds_load(src.irds_id, data_dir)
    queries = list(ds.queries_iter())
    nq = int(spec.get("n_query", len(queries)))
    queries = queries[:nq]
    qids = {q.query_id for q in queries}
    qrels = [(r.query_id, r.doc_id, int(r.relevance)) for r in ds.qrels_iter() if r.query_id in qids]
    judged = {d for _, d, _ in qrels}
    limit = spec.get("n_passages")
    ids, docs = [], []
    store = ds.docs_store()
    for did in sorted(judged):
        ids.append(did)
        docs.append(_doc_text(store.get(did)))
    seen = set(ids)
    for d in ds.docs_iter():
        if limit is not None and len(ids) >= int(limit):
            break
        if d.doc_id not in seen:
            ids.append(d.doc_id)
            docs.append(_doc_text(d))
            seen.add(d.doc_id)
    import pandas as pd

    sub = text.TextDataset(ids, [t.replace("\t", " ").replace("\n", " ") for t in docs],
                           [q.query_id for q in queries], [q.text for q in queries],
                           pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]), id=name)
    m = _write_text_files(sub, out)
    m["irds_id"] = src.irds_id
    return m


# --------------------------------------------------------------------------- loading
MANIFEST_FILES = {"vectors": ("base", "queries", "groundtruth"), "text": ("collection", "queries", "qrels")}


def read_manifest(path: str | os.PathLike) -> dict:
    """A prepared dataset's manifest; :class:`DataFormatError` naming what is missing when it is not one."""
    try:
        m = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DataFormatError(f"{path}: no such manifest (was the dataset prepared?)") from None
    except (ValueError, UnicodeDecodeError, IsADirectoryError) as exc:
        raise DataFormatError(f"{path}: not a manifest (not JSON: {str(exc)[:80]})") from None
    files = m.get("files") if isinstance(m, dict) else None
    need = MANIFEST_FILES.get(m.get("kind")) if isinstance(m, dict) else None
    if need is None or not isinstance(files, dict):
        raise DataFormatError(f"{path}: not a prepared dataset's manifest (no kind vectors/text or no files; "
                              "`bench data prepare` writes one)")
    missing = [k for k in need if not isinstance(files.get(k), dict) or "path" not in files[k]]
    if missing:
        raise DataFormatError(f"{path}: manifest of {m.get('name')!r} lacks the file(s) {', '.join(missing)}")
    return m


def load_vectors(manifest_path: str | os.PathLike) -> VectorDataset:
    m = read_manifest(manifest_path)
    if m.get("kind") != "vectors":
        raise DataFormatError(f"{manifest_path}: dataset {m.get('name')!r} is not a vector dataset")
    f = m["files"]
    base = formats.read_vectors(f["base"]["path"], f["base"]["format"], check_rows=False)[: f["base"]["rows"]]
    queries = formats.read_vectors(f["queries"]["path"], f["queries"]["format"])[: f["queries"]["rows"]]
    ids, dist = formats.read_groundtruth(f["groundtruth"]["path"])
    nq = queries.shape[0]
    return VectorDataset(name=m["name"], id=m["source"], base=base, queries=queries,
                         gt_ids=ids[:nq], gt_dist=None if dist is None else dist[:nq],
                         metric=m["metric"], checksum=m["checksum"])


def load_text(manifest_path: str | os.PathLike) -> text.TextDataset:
    m = read_manifest(manifest_path)
    if m.get("kind") != "text":
        raise DataFormatError(f"{manifest_path}: dataset {m.get('name')!r} is not a text dataset")
    f = m["files"]
    ds = text.read_text_dataset(f["collection"]["path"], f["queries"]["path"], f["qrels"]["path"],
                                id=m["name"])
    ds.checksum = m["checksum"]
    return ds


def _doc_text(doc) -> str:
    """A passage's text, or a document's default text (MS MARCO documents have title and body only)."""
    text = getattr(doc, "text", None)
    return text if text is not None else doc.default_text()
