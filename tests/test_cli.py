"""The `bench` command."""
from __future__ import annotations

import subprocess
import sys

from bench import cli


def test_data_list_shows_the_registered_ids(capsys):
    assert cli.main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for sid in ("sift1m", "bigann-10m", "deep-100m", "msmarco-passage/trec-dl-2019/judged",
                "msmarco-passage/dev/small", "synthetic/syn-1024"):
        assert sid in out


def test_errors_are_clear_and_exit_2(capsys, tmp_path):
    assert cli.main(["data", "prepare", "x", "--spec", '{"source": "sift2m"}', "--profile", "t",
                     "--data-dir", str(tmp_path)]) == 2
    assert "unknown dataset id 'sift2m'" in capsys.readouterr().err


def test_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "bench", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "ivf-recall" in r.stdout
