"""Records: tidy Parquet + summary CSV + provenance; atomic writes; provenance fields."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from bench.core.base import atomic

from bench.core.measuring import provenance, records

REQUIRED = ["git_commit", "git_dirty", "profile", "config_hash", "dataset_id", "dataset_checksum",
            "versions", "cpu_model", "cpu_cores", "gpu", "threads", "loadavg_at_start", "timestamp",
            "seed", "method"]


def test_provenance_has_every_field():
    p = provenance.collect(profile="tiny", config={"b": 1, "a": [1, 2]}, seed=3, dataset_id="x",
                           dataset_checksum="abc", method="wall clock")
    for key in REQUIRED:
        assert key in p, key
    assert set(p["versions"]) >= {"python", "numpy", "torch", "faiss"}
    assert p["config_hash"] == provenance.config_hash({"a": [1, 2], "b": 1})
    assert p["config_hash"] != provenance.config_hash({"a": [1, 2], "b": 2})
    json.dumps(p, default=str)


def test_write_and_read_round_trip(tmp_path):
    df = pd.DataFrame({"nprobe": [1, 1, 2], "qps": [10.0, 12.0, 5.0]})
    prov = provenance.collect(profile="t", config={}, seed=0, method="m")
    out = records.write(tmp_path / "r.parquet", df, prov, records.summarize_runs(df, ["nprobe"], "qps"))
    back = records.read(out)
    pd.testing.assert_frame_equal(back, df)
    assert back.attrs["provenance"]["seed"] == 0 == records.read_provenance(out)["seed"]
    summary = pd.read_csv(tmp_path / "r.summary.csv")
    assert summary.loc[summary.nprobe == 1, "median"].item() == 11.0
    assert json.loads((tmp_path / "r.provenance.json").read_text())["profile"] == "t"


def test_interrupted_write_leaves_nothing_a_later_run_could_take_as_complete(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_path(target) as tmp:
            tmp.write_bytes(b"half")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(target) as tmp:
            tmp.write_bytes(b"new")
            raise RuntimeError
    assert target.read_bytes() == b"old"


def test_empty_records_are_refused(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        records.write(tmp_path / "r.parquet", pd.DataFrame(), {})
    assert not (tmp_path / "r.parquet").exists()
