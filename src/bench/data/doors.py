"""The data layer's checks at the command line's door (:data:`bench.core.commands.doors.FILE_CHECKS`): a
prepared dataset's manifest whose files are still the ones it was written for (same sha256), and a
big-ann ``*bin`` vector file whose size agrees with its header. A truncated, foreign or changed file
gets a short ``bench: error:`` naming it before any work. ``bench``'s command line calls
:func:`register` when it starts."""
from __future__ import annotations

import os
from pathlib import Path

from ..core.base.errors import ConfigError, DataFormatError
from ..core.commands.doors import file_check
from . import formats, prepared

BIN_ITEM_BYTES = {".fbin": 4, ".ibin": 4, ".u8bin": 1, ".i8bin": 1}


def manifest(label: str, path: str) -> dict:
    """A prepared dataset's manifest whose files are still the ones it was written for (same sha256)."""
    try:
        m = prepared.read_manifest(path)
    except DataFormatError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    for name, entry in sorted(m["files"].items()):
        f = Path(entry.get("path", ""))
        if not f.is_file():
            raise ConfigError(f"{label}: its {name} file {f} is missing (prepare the dataset again)")
        if entry.get("digest") and prepared.file_digest(f) != entry["digest"]:
            raise ConfigError(f"{label}: its {name} file {f} changed since the manifest was written "
                              "(sha256 differs; prepare the dataset again)")
    return m


def vectors(label: str, path: str) -> None:
    """A big-ann ``*bin`` vector file whose size agrees with its header."""
    try:
        n, d = formats.bin_header(path)
        item = BIN_ITEM_BYTES[Path(path).suffix]
        size = os.path.getsize(path)
        if size != 8 + n * d * item:
            raise DataFormatError(f"header says {n} x {d} ({8 + n * d * item} B) but the file has {size} B")
    except DataFormatError as exc:
        raise ConfigError(f"{label}: {exc}") from None


def register() -> None:
    """Hand these checks to the command line's door (idempotent)."""
    file_check("manifest")(manifest)
    for suffix in BIN_ITEM_BYTES:
        file_check(suffix)(vectors)
