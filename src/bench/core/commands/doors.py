"""What every command of the harness checks before it starts work: the doors a researcher uses directly
(a step rerun by hand from the command a rule printed, a build, a figure, the claims). Each check raises
:class:`ConfigError` with a short message naming the culprit; ``bench``'s ``main`` prints it as
``bench: error: ...`` (exit 2), never a traceback.

- :func:`positive_int`, :func:`nonneg_int`: argparse types for counts and seeds;
- :func:`study_params`: ``--params`` validated against the study's schema section, by the same validator
  and message format as the profile (defaults come from the schema);
- :func:`inputs`: ``--input KEY=PATH``: every key one the step declares (``needs``/``optional`` of :func:`bench.core.declaring.study.step`),
  every required key given, every path present;
- :func:`dataset`: ``--dataset`` declared in the params' ``datasets`` and equal to the manifest's name;
- :func:`records`: ``--records KIND=PATH``: kinds the verb reads, files present;
- :func:`input_files`: each ``--input`` file is what its key and suffix say (a manifest whose files are the
  ones it was written for, a faiss index that reads whole, a Parquet record set, a big-ann ``*bin`` whose size
  agrees with its header, JSON that parses), so a truncated or foreign file is bad input, not a bug;
- :func:`out_path`: ``--out`` can be written (a file is created and removed in its folder: as root, a
  permission check alone says yes to a read-only mount);
- :func:`claims_files`: ``bench ledger --claims``: each a study's claims record set.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..declaring import config
from ..base.errors import ConfigError


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    n = _int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def nonneg_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    n = _int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return x


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def study_params(study: str, params: Any) -> dict:
    """``--params`` of ``study``: validated against its schema section, defaults filled."""
    if not isinstance(params, dict):
        raise ConfigError(f"--params must be a JSON object (the {study} section), got {type(params).__name__}")
    try:
        return config.validate_section(study, params)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("invalid config at", "invalid --params at", 1)) from None


def _matches(key: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def inputs(what: str, given: Mapping[str, list[str]], declared: tuple[tuple[str, ...], tuple[str, ...]] | None) -> None:
    """Check ``--input`` pairs of ``what`` (e.g. ``trinity measure recall``) against its declaration."""
    if declared is not None:
        required, optional = declared
        known = (*required, *optional)
        for key in given:
            if not _matches(key, known):
                raise ConfigError(f"{what}: --input {key}=...: not an input of this step; it reads "
                                  f"{', '.join(known) or 'no --input'}")
        for key in required:
            if not any(fnmatch.fnmatchcase(k, key) for k in given):
                raise ConfigError(f"{what}: needs --input {key}=PATH")
    for key, paths in given.items():
        for p in paths:
            if not Path(p).exists():
                raise ConfigError(f"{what}: --input {key}={p}: no such file or folder")


def records(what: str, given: Mapping[str, list[str]], kinds: Iterable[str]) -> None:
    """Check ``--records`` pairs: each kind one that ``what`` reads, each file present and a Parquet file."""
    kinds = list(kinds)
    for kind, paths in given.items():
        if kind not in kinds:
            raise ConfigError(f"{what}: --records {kind}=...: not a record kind it reads ({', '.join(kinds)})")
        for p in paths:
            if not Path(p).is_file():
                raise ConfigError(f"{what}: --records {kind}={p}: no such file")
            _parquet(f"{what}: --records {kind}={p}", p)


def _parquet(label: str, path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except (OSError, pa.ArrowException) as exc:
        raise ConfigError(f"{label}: not a Parquet record set ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]


FILE_CHECKS: dict[str, Callable[[str, str], Any]] = {}
"""Checks of data files that only the data layer can read, registered by it (:func:`file_check`):
``"manifest"`` for a prepared dataset's manifest, a suffix (``".fbin"``) for a vector file. Core names no
data module; ``bench.data.doors`` registers these when the command line starts."""


def file_check(kind: str) -> Callable[[Callable[[str, str], Any]], Callable[[str, str], Any]]:
    """Register ``fn(label, path)`` as the door check of a manifest (``kind="manifest"``) or of files with
    the suffix ``kind``: it raises :class:`ConfigError` naming ``label`` on bad input."""
    def mark(fn):
        FILE_CHECKS[kind] = fn
        return fn
    return mark


def manifest(label: str, path: str) -> Any:
    """A prepared dataset's manifest whose files are still the ones it was written for (the data layer's check)."""
    check = FILE_CHECKS.get("manifest")
    if check is None:
        raise RuntimeError("no manifest check registered: import bench.data.doors before checking inputs")
    return check(label, path)


def input_files(what: str, given: Mapping[str, list[str]]) -> None:
    """Each ``--input`` file is what its key or suffix says, read before any work: a truncated, foreign or
    changed file gets a short error naming it instead of failing deep inside a step."""
    for key, paths in given.items():
        for p in paths:
            path = Path(p)
            if not path.is_file():
                continue   # folders (a bundle's) are the step's to read
            label = f"{what}: --input {key}={p}"
            if key.startswith("manifest") or path.name == "manifest.json":
                manifest(label, p)
            elif path.suffix == ".faiss" or key.split("_")[0] == "index":
                faiss_index(label, p)
            elif path.suffix == ".parquet":
                _parquet(label, p)
            elif path.suffix in FILE_CHECKS:
                FILE_CHECKS[path.suffix](label, p)
            elif path.suffix == ".json":
                _json(label, p)


def faiss_index(label: str, path: str) -> None:
    """A faiss index that reads whole (a truncated or foreign file raises inside faiss)."""
    import faiss

    try:
        faiss.read_index(str(path))
    except (RuntimeError, MemoryError) as exc:
        raise ConfigError(f"{label}: not a readable faiss index ({_first_line(exc)})") from None


def _json(label: str, path: str) -> None:
    try:
        json.loads(Path(path).read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{label}: not JSON ({_first_line(exc)})") from None


def _manifest_name(paths: list[str]) -> str | None:
    try:
        return json.loads(Path(paths[0]).read_text()).get("name")
    except (OSError, ValueError, AttributeError):
        return None


def dataset(what: str, name: str | None, params: Mapping[str, Any], given: Mapping[str, list[str]]) -> None:
    """``--dataset``: declared in the params' ``datasets`` (when they list any), and the manifest's own
    name when a manifest is read: a flag that would be ignored, or contradicted, is an error."""
    if name is None:
        return
    declared = params.get("datasets")
    if isinstance(declared, list) and name not in declared:
        raise ConfigError(f"{what}: --dataset {name!r} is not declared in --params datasets "
                          f"(declared: {', '.join(map(str, declared)) or 'none'})")
    if given.get("manifest"):
        real = _manifest_name(given["manifest"])
        if real is not None and real != name:
            raise ConfigError(f"{what}: --dataset {name!r} but --input manifest is dataset {real!r}")


def out_path(what: str, out: str | os.PathLike, suffix: str | None = None) -> None:
    """``--out``: its folder exists or can be made, and is writable; the suffix, when one is required."""
    path = Path(out)
    if suffix and path.suffix != suffix:
        raise ConfigError(f"{what}: --out {out}: expected a {suffix} file")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK) or not _can_create(parent):
        raise ConfigError(f"{what}: --out {out}: {parent} is not a writable folder")
    if suffix and path.is_dir():   # a build may write a folder (ESPN's index); a record set is one file
        raise ConfigError(f"{what}: --out {out}: is a folder, expected a {suffix} file")


def _can_create(folder: Path) -> bool:
    """A file can really be made in ``folder`` (root passes every permission check, not a read-only mount)."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".bench-write-check-"):
            return True
    except OSError:
        return False


def claims_files(paths: Iterable[str]) -> None:
    """``bench ledger --claims``: each file exists and is a study's claims.parquet (its columns)."""
    import dataclasses

    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..judging.claims import Claim

    need = {f.name for f in dataclasses.fields(Claim)}
    for p in paths:
        if not Path(p).is_file():
            raise ConfigError(f"ledger: --claims {p}: no such file")
        try:
            have = set(pq.read_schema(p).names)
        except (OSError, pa.ArrowException) as exc:
            raise ConfigError(f"ledger: --claims {p}: not a Parquet file ({str(exc).splitlines()[0][:120]})") from None
        if not need <= have:
            raise ConfigError(f"ledger: --claims {p}: not a claims file (no column(s) "
                              f"{', '.join(sorted(need - have))}; write one with `bench <study> claims`)")
