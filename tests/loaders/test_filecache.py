"""RAMDISK copies and cold page caches (section 2.3)."""
from __future__ import annotations

import pytest

from bench.loaders.system import filecache
from bench.loaders.system.errors import ConfigError
from bench.loaders.system.stores import make_store


def test_ramdisk_copy_is_read_then_removed(bundle, tmp_path):
    store = make_store("ir_datasets", bundle)
    with filecache.RamdiskCopy(bundle, store.files(), root=tmp_path) as rd:
        assert rd.bytes == sum(f.stat().st_size for f in store.files())
        copy = make_store("ir_datasets", rd.dir).open()
        first = (bundle / "docs.tsv").read_text().split("\n", 1)[0].split("\t")
        assert copy.get(first[0]) == first[1]
    assert not rd.dir.exists()


def test_evict_and_missing_ramdisk(bundle, tmp_path):
    files = make_store("indexed", bundle).files()
    assert filecache.evict(files) == sum(f.stat().st_size for f in files)
    with pytest.raises(ConfigError, match="RAMDISK"):
        filecache.RamdiskCopy(bundle, files, root=tmp_path / "nope")
