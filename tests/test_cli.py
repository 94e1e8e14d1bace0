"""The `bench` command."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bench import cli

TINY = Path(__file__).resolve().parents[1] / "experiments" / "tiny.yaml"


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


def test_study_verb_checks_its_input_before_any_work(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # no Snakefile here
    shutil.copy(TINY, "tiny.yaml")
    for argv, says in ((["study", "nope"], "study nope: no such study; known: "),
                       (["study", "ivf_recall", "--configfile", "none.yaml"], "--configfile none.yaml: no such file"),
                       (["study", "ivf-recall", "--configfile", "tiny.yaml"], "run it from the repository's root"),
                       (["study", "ivf_recall", "--configfile", "tiny.yaml", "--no-run"], "no results/tiny/ivf_recall/"
                                                                                           "claims.parquet yet")):
        assert cli.main(argv) == 2
        assert says in capsys.readouterr().err, argv
    (tmp_path / "Snakefile").touch()
    assert cli.main(["study", "ivf_recall", "--configfile", "tiny.yaml", "--forcerun", "nope"]) == 2
    assert "no step(s) ['nope']; its steps: index, recall" in capsys.readouterr().err
    (tmp_path / "off.yaml").write_text("profile: t\nivf_recall: {enabled: false}\n")
    assert cli.main(["study", "ivf_recall", "--configfile", "off.yaml"]) == 2
    assert "not enabled in off.yaml; add the line `ivf_recall: {enabled: true}`" in capsys.readouterr().err


def test_study_verb_joins_the_ledger_and_report_over_what_exists(capsys, tmp_path, monkeypatch):
    import pandas as pd

    from bench.core.judging import claims, intervals

    monkeypatch.chdir(tmp_path)
    shutil.copy(TINY, "tiny.yaml")
    row = claims.claim("ivf_recall", "target-recall", "recall at nprobe 16", "0.9", threshold=0.9, needs=(),
                       estimate=intervals.cluster_proportion_ci([10] * 100, [10] * 100), quality="recall")
    claims.write([row], "results/tiny/ivf_recall/claims.parquet", {"profile": "tiny"})
    assert cli.main(["study", "ivf-recall", "--configfile", "tiny.yaml", "--no-run"]) == 0
    out = capsys.readouterr().out
    assert "ivf_recall: 1 row(s) in the ledger joined over the claims that exist" in out
    assert "target-recall: reproduced; ours 1 [0.9" in out
    assert pd.read_parquet("results/tiny/partial/claims.parquet").claim_id.tolist() == ["target-recall"]
    assert "target-recall" in (tmp_path / "reports/tiny/partial/index.html").read_text()
    assert not (tmp_path / "results/tiny/claims.md").exists() and not (tmp_path / "results/tiny/history").exists()
