"""The loaders of Moving Stuff Around (section 2.2) behind one interface, :class:`DocStore`:

- ``in-memory``: every document in a Python dict (what most research code does);
- ``indexed``: a dict of byte offsets into the TSV, read with ``seek`` + ``readline`` (Listing 2);
- ``indexed-mmap``: the same table, read through ``mmap`` with ``MADV_RANDOM`` (the authors' code);
- ``ir_datasets``: ``docs_store()`` lookups (lz4 blocks, a sorted numpy offsets index);
- ``arrow``: a memory-mapped HF ``datasets`` table and a sorted numpy id index (beyond the paper).

``open()`` loads or opens what the loader keeps in memory (its time is the corpus loading time) and
checks the files first; file handles are reopened in every process that reads (DataLoader workers
forked after ``open`` must not share a file offset), and a store pickled for a worker started by
``spawn`` or ``forkserver`` leaves its handles behind (the worker opens its own).
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from . import collection as coll
from .collection import irds_dataset
from .errors import ConfigError, StoreError

LOADERS = ("in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow")
PAPER_LOADERS = ("in-memory", "indexed", "ir_datasets")


class DocStore:
    """One loader: ``open()`` once, then ``get(doc_id) -> text`` in any process."""

    name = ""
    handles = ("fh", "mm", "store")   # per-process file objects: never pickled

    def __init__(self, bundle_dir: str | os.PathLike):
        self.dir = Path(bundle_dir)
        self._pid = None

    def files(self) -> list[Path]:
        """The files this loader reads at run time (copied to a RAMDISK, evicted for a cold cache)."""
        raise NotImplementedError

    def open(self) -> "DocStore":
        raise NotImplementedError

    def get(self, doc_id: str) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __getstate__(self) -> dict:
        """What a spawned or forkserver worker receives: everything but the open handles, which the
        worker reopens on its first read (as a forked one does)."""
        state = {k: v for k, v in self.__dict__.items() if k not in self.handles}
        state["_pid"] = None
        return state

    def _per_process(self) -> bool:
        """True when this process has not opened its own handles yet."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            return True
        return False


class InMemoryStore(DocStore):
    name = "in-memory"

    def files(self):
        return [self.dir / coll.DOCS]

    def open(self):
        docs = {}
        with open(self.dir / coll.DOCS, encoding="utf-8") as fh:
            for line in fh:
                doc_id, _, text = line.rstrip("\n").partition("\t")
                docs[doc_id] = text
        self.docs = docs
        return self

    def get(self, doc_id):
        return self.docs[doc_id]


def _load_offsets(path: Path) -> dict:
    try:
        with np.load(path) as z:
            return {"ids": z["ids"], "offsets": z["offsets"], "file_size": int(z["file_size"]),
                    "digest": str(z["digest"])}
    except (OSError, KeyError, ValueError) as exc:
        raise StoreError(f"{path}: unreadable offsets table ({exc})") from None


class IndexedStore(DocStore):
    """Listing 2 of the paper: {doc_id: byte offset} in memory, the text read from the file."""

    name = "indexed"
    checks = 16  # offsets verified at open (first, last and random ones)

    def files(self):
        return [self.dir / coll.DOCS, self.dir / coll.OFFSETS]

    def open(self):
        tab = _load_offsets(self.dir / coll.OFFSETS)
        path = self.dir / coll.DOCS
        if not path.exists():
            raise StoreError(f"{path}: collection file missing")
        size = path.stat().st_size
        if size != tab["file_size"]:
            raise StoreError(f"{self.dir / coll.OFFSETS}: built for a {tab['file_size']}-byte collection, "
                             f"but {path} has {size} bytes")
        self.index = dict(zip((i.decode() for i in tab["ids"]), tab["offsets"].tolist()))
        n = len(tab["ids"])
        probe = {0, n - 1, *np.random.default_rng(0).integers(0, n, self.checks).tolist()} if n else set()
        for k in sorted(probe):
            self.get(tab["ids"][k].decode())
        return self

    def _line(self, offset: int) -> bytes:
        if self._per_process():
            self.fh = open(self.dir / coll.DOCS, "rb")
        self.fh.seek(offset)  # O(1): lseek
        return self.fh.readline()

    def get(self, doc_id):
        off = self.index[doc_id]
        line = self._line(off)
        head, sep, text = line.partition(b"\t")
        if not sep or head.decode("utf-8", "replace") != doc_id:
            raise StoreError(f"{self.dir / coll.OFFSETS}: offset {off} of document {doc_id!r} points at "
                             f"{head[:20]!r} in {self.dir / coll.DOCS}: the table does not match the file")
        return text.rstrip(b"\n").decode("utf-8")

    def close(self):
        if getattr(self, "fh", None) is not None:
            self.fh.close()


class IndexedMmapStore(IndexedStore):
    """The authors' variant: the same offsets, the file mapped with ``MADV_RANDOM``."""

    name = "indexed-mmap"

    def _line(self, offset):
        if self._per_process():
            with open(self.dir / coll.DOCS, "rb") as fh:
                self.mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            self.mm.madvise(mmap.MADV_RANDOM)
        end = self.mm.find(b"\n", offset)
        return self.mm[offset: len(self.mm) if end < 0 else end + 1]

    def close(self):
        if getattr(self, "mm", None) is not None:
            self.mm.close()


IRDS_FILES = ("bin", "bin.pos", "bin.meta", "idx.doc_id.key", "idx.doc_id.pos", "idx.doc_id.meta")


class IrdsStore(DocStore):
    name = "ir_datasets"

    def files(self):
        store = self.dir / coll.IRDS_STORE
        return [self.dir / coll.DOCS] + [store / f for f in IRDS_FILES]

    def open(self):
        missing = [str(p) for p in self.files()[1:] if not p.exists()]
        if missing:
            raise StoreError(f"ir_datasets docstore incomplete, missing {', '.join(missing)} "
                             "(run `bench loaders build` again)")
        self._per_process()
        self.store = irds_dataset(self.dir / coll.DOCS).docs_store()
        with open(self.dir / coll.DOCS, "rb") as fh:
            first = fh.readline().split(b"\t", 1)[0].decode()
        self.get(first)
        return self

    def get(self, doc_id):
        if self._per_process():  # a fresh store object: its own file handles in this process
            self.store = irds_dataset(self.dir / coll.DOCS).docs_store()
        try:
            return self.store.get(doc_id).text
        except KeyError:
            raise
        except Exception as exc:  # lz4 / pickle / index errors of a corrupt store
            raise StoreError(f"{self.dir / coll.IRDS_STORE}: corrupt ir_datasets docstore "
                             f"({type(exc).__name__}: {exc})") from None


class ArrowStore(DocStore):
    """Beyond the paper: a memory-mapped Arrow table; ids found by binary search in a numpy array."""

    name = "arrow"

    def files(self):
        return sorted(p for p in (self.dir / coll.ARROW).iterdir() if p.is_file()) if (self.dir / coll.ARROW).is_dir() \
            else [self.dir / coll.ARROW]

    def open(self):
        import datasets

        try:
            self.table = datasets.Dataset.load_from_disk(str(self.dir / coll.ARROW))
        except (FileNotFoundError, ValueError) as exc:
            raise StoreError(f"{self.dir / coll.ARROW}: no readable Arrow table ({exc})") from None
        ids = np.array(self.table["doc_id"], dtype=bytes)
        self.order = np.argsort(ids, kind="stable")
        self.sorted_ids = ids[self.order]
        return self

    def get(self, doc_id):
        key = doc_id.encode()
        k = int(np.searchsorted(self.sorted_ids, key))
        if k >= len(self.sorted_ids) or self.sorted_ids[k] != key:
            raise KeyError(doc_id)
        return self.table[int(self.order[k])]["text"]


_STORES = {c.name: c for c in (InMemoryStore, IndexedStore, IndexedMmapStore, IrdsStore, ArrowStore)}


def check_loader(name: str) -> str:
    if name not in _STORES:
        raise ConfigError(f"unknown loader {name!r}; known loaders: {', '.join(LOADERS)}")
    return name


def make_store(name: str, bundle_dir: str | os.PathLike) -> DocStore:
    """The (unopened) loader ``name`` over the collection bundle in ``bundle_dir``."""
    return _STORES[check_loader(name)](bundle_dir)
