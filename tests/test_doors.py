"""Every door checks what it is given (the every-door issue): one table of bad inputs, each with the
command, the exit code and the words its message must contain; no output may hold a traceback. The
table is also docs/bad-inputs.md (regenerate it with ``python -m tests.test_doors > docs/bad-inputs.md``).

Placeholders in a command: {tmp} a scratch folder, {manifest} a vector manifest of dataset "tiny-sift",
{index} / {graph} / {trace} existing files, {records} a record set that is not a claims file, {text} a
text file, {bundle} a loaders bundle.json, {port} a port in use on 127.0.0.1.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from bench import cli

IVF = json.dumps({"datasets": ["tiny-sift"]})
RUN = ["--profile", "t", "--seed", "0", "--threads", "1"]
MEASURE = ["ivf-recall", "measure", "recall", "--input", "manifest={manifest}", "--input", "index={index}",
           "--out", "{tmp}/r.parquet", *RUN]
TORCHRUN = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"}
RANK = ["loaders", "ddp-rank", "--bundle", "{bundle}", "--loader", "ir_datasets", "--out-dir", "{tmp}/ranks"]
SERVE = ["windve", "serve", "--emulate", "v100-xeon", "--emulated-alpha", "0.001", "--emulated-beta", "0"]

# (door, case, command, environment, exit code, words the message must contain)
CASES = [
    # ---------------------------------------------------------------- the study CLI: measure
    ("study CLI", "--threads 0", [*MEASURE[:-1], "0", "--params", IVF], {}, 2, ["--threads", "must be >= 1, got 0"]),
    ("study CLI", "--threads not a number", [*MEASURE[:-1], "two", "--params", IVF], {}, 2, ["--threads", "not an integer"]),
    ("study CLI", "--seed negative", [*MEASURE[:-3], "-1", "--threads", "1", "--params", IVF], {}, 2, ["--seed", "must be >= 0"]),
    ("study CLI", "misspelled key in --params", [*MEASURE, "--params", '{"nprobee": [1]}'], {}, 2,
     ["invalid --params at 'ivf_recall.nprobee'", "unknown key"]),
    ("study CLI", "wrong type in --params", [*MEASURE, "--params", '{"repeats": "many"}'], {}, 2,
     ["invalid --params at 'ivf_recall.repeats'"]),
    ("study CLI", "out-of-range value in --params", [*MEASURE, "--params", '{"repeats": 0}'], {}, 2,
     ["invalid --params at 'ivf_recall.repeats'", "minimum"]),
    ("study CLI", "--params not JSON", [*MEASURE, "--params", "{repeats: 1"], {}, 2, ["--params", "not valid JSON"]),
    ("study CLI", "--params not an object", [*MEASURE, "--params", "[1, 2]"], {}, 2, ["--params must be a JSON object"]),
    ("study CLI", "--input key the step does not read", [*MEASURE, "--input", "graph={graph}", "--params", IVF], {}, 2,
     ["--input graph=", "not an input of this step", "manifest, index"]),
    ("study CLI", "--input path that does not exist",
     ["ivf-recall", "measure", "recall", "--input", "manifest={manifest}", "--input", "index={tmp}/nope.faiss",
      "--out", "{tmp}/r.parquet", *RUN, "--params", IVF], {}, 2, ["--input index=", "nope.faiss", "no such file"]),
    ("study CLI", "required --input missing",
     ["ivf-recall", "measure", "recall", "--input", "manifest={manifest}", "--out", "{tmp}/r.parquet", *RUN,
      "--params", IVF], {}, 2, ["needs --input index=PATH"]),
    ("study CLI", "--input without KEY=", [*MEASURE, "--input", "{index}", "--params", IVF], {}, 2, ["expected KEY=PATH"]),
    ("study CLI", "a manifest that is not one",
     ["ivf-recall", "measure", "recall", "--input", "manifest={records}", "--input", "index={index}",
      "--out", "{tmp}/r.parquet", *RUN, "--params", IVF], {}, 2, ["not a manifest"]),
    ("study CLI", "a manifest without its files", [*MEASURE, "--params", IVF], {}, 2,
     ["manifest of 'tiny-sift' lacks the file(s) base, queries, groundtruth"]),
    ("study CLI", "--dataset not declared", [*MEASURE, "--dataset", "sift1m", "--params", IVF], {}, 2,
     ["--dataset 'sift1m' is not declared", "declared: tiny-sift"]),
    ("study CLI", "--dataset other than the manifest's",
     [*MEASURE, "--dataset", "deep-like", "--params", json.dumps({"datasets": ["tiny-sift", "deep-like"]})], {}, 2,
     ["--dataset 'deep-like'", "manifest is dataset 'tiny-sift'"]),
    ("study CLI", "--out in a folder that cannot be written",
     [*MEASURE[:8], "{text}/r.parquet", *RUN, "--params", IVF], {}, 2, ["--out", "not a writable folder"]),
    ("study CLI", "--out not a record set", [*MEASURE[:8], "{tmp}/r.csv", *RUN, "--params", IVF], {}, 2,
     ["--out", "expected a .parquet"]),
    ("study CLI", "unknown step", ["ivf-recall", "measure", "speed", "--out", "{tmp}/r.parquet", *RUN, "--params", IVF],
     {}, 2, ["invalid choice: 'speed'"]),
    ("study CLI", "unknown study", ["ivf_recal", "measure"], {}, 2, ["invalid choice: 'ivf_recal'"]),
    ("study CLI", "a step's second input missing (trinity load)",
     ["trinity", "measure", "load", "--input", "manifest={manifest}", "--input", "graph={graph}",
      "--out", "{tmp}/l.parquet", *RUN, "--params", "{}"], {}, 2, ["needs --input trace=PATH"]),
    ("study CLI", "an input of another step (chameleon ralm)",
     ["chameleon", "measure", "ralm", "--input", "manifest_small={manifest}", "--input", "index_small={index}",
      "--input", "graph={graph}", "--out", "{tmp}/r.parquet", *RUN, "--params", "{}"], {}, 2,
     ["--input graph=", "not an input of this step"]),
    ("study CLI", "build with its manifest missing",
     ["loaders", "build", "--input", "manifest={tmp}/none.json", "--out", "{tmp}/b/bundle.json", *RUN,
      "--params", "{}"], {}, 2, ["--input manifest=", "no such file"]),
    ("study CLI", "build with a misspelled --params key",
     ["trinity", "build", "--input", "manifest={manifest}", "--out", "{tmp}/g.ibin", *RUN,
      "--params", '{"graph": {"degre": 8}}'], {}, 2, ["invalid --params at 'trinity.graph.degre'"]),
    # ---------------------------------------------------------------- the study CLI: corrupt inputs (#31)
    ("study CLI", "a truncated faiss index",
     ["ivf-recall", "measure", "recall", "--input", "manifest={good_manifest}", "--input", "index={short_index}",
      "--out", "{tmp}/r.parquet", *RUN, "--params", IVF], {}, 2, ["--input index=", "short.faiss",
                                                                 "not a readable faiss index"]),
    ("study CLI", "a foreign file as the index",
     ["ivf-recall", "measure", "recall", "--input", "manifest={good_manifest}", "--input", "index={text}",
      "--out", "{tmp}/r.parquet", *RUN, "--params", IVF], {}, 2, ["--input index=", "text.txt",
                                                                 "not a readable faiss index"]),
    ("study CLI", "a manifest whose files changed",
     ["ivf-recall", "measure", "recall", "--input", "manifest={changed_manifest}", "--input", "index={good_index}",
      "--out", "{tmp}/r.parquet", *RUN, "--params", IVF], {}, 2, ["--input manifest=", "changed since the manifest"]),
    ("study CLI", "a big-ann file shorter than its header",
     ["trinity", "measure", "load", "--input", "manifest={good_manifest}", "--input", "graph={graph}",
      "--input", "trace={records}", "--out", "{tmp}/l.parquet", *RUN, "--params", "{}"], {}, 2,
     ["--input graph=", "graph.ibin", "too small for a big-ann header"]),
    ("study CLI", "--out that is a folder", [*MEASURE[:8], "{tmp}/folder.parquet", *RUN, "--params", IVF], {}, 2,
     ["--out", "is a folder"]),
    ("study CLI", "--out where no file can be made (even as root)",
     [*MEASURE[:8], "/proc/r.parquet", *RUN, "--params", IVF], {}, 2, ["--out", "not a writable folder"]),
    ("study CLI", "figure: records that are not Parquet",
     ["ivf-recall", "figure", "all", "--records", "recall={text}", "--out-dir", "{tmp}/f"], {}, 2,
     ["--records recall=", "text.txt", "not a Parquet record set"]),
    ("study CLI", "figure: records without the figure's columns",
     ["ivf-recall", "figure", "all", "--records", "recall={records}", "--out-dir", "{tmp}/f"], {}, 2,
     ["records.parquet", "have no column"]),
    ("study CLI", "claims: records that are not Parquet",
     ["ivf-recall", "claims", "--records", "recall={text}", "--profile", "t", "--params", IVF,
      "--out", "{tmp}/c.parquet"], {}, 2, ["--records recall=", "not a Parquet record set"]),
    # ---------------------------------------------------------------- the study CLI: figure and claims
    ("study CLI", "unknown figure", ["ivf-recall", "figure", "fig99", "--records", "recall={records}",
                                     "--out", "{tmp}/f.png"], {}, 2, ["invalid choice: 'fig99'"]),
    ("study CLI", "figure: a record kind it does not read",
     ["ivf-recall", "figure", "all", "--records", "speed={records}", "--out-dir", "{tmp}/f"], {}, 2,
     ["--records speed=", "not a record kind it reads", "recall"]),
    ("study CLI", "figure: a named figure's record kind missing",
     ["loaders", "figure", "loader_only_throughput", "table3_options", "--records", "loader_only={records}",
      "--out-dir", "{tmp}/f"], {}, 2, ["figure table3_options reads record kind(s) options", "--records options=PATH"]),
    ("study CLI", "figure: a record set that does not exist",
     ["ivf-recall", "figure", "all", "--records", "recall={tmp}/none.parquet", "--out-dir", "{tmp}/f"], {}, 2,
     ["--records recall=", "no such file"]),
    ("study CLI", "figure: --out with several figures",
     ["loaders", "figure", "all", "--records", "train={records}", "--out", "{tmp}/f.png"], {}, 2,
     ["--out takes one figure"]),
    ("study CLI", "figure: an unknown format",
     ["ivf-recall", "figure", "all", "--records", "recall={records}", "--out-dir", "{tmp}/f", "--formats", "png,gif"],
     {}, 2, ["--formats"]),
    ("study CLI", "claims: a record kind missing",
     ["loaders", "claims", "--records", "train={records}", "--profile", "t", "--params", "{}", "--out",
      "{tmp}/c.parquet"], {}, 2, ["needs --records for", "options"]),
    ("study CLI", "claims: misspelled --params key",
     ["ivf-recall", "claims", "--records", "recall={records}", "--profile", "t", "--params", '{"k": [10], "x": 1}',
      "--out", "{tmp}/c.parquet"], {}, 2, ["invalid --params at 'ivf_recall.x'"]),
    # ---------------------------------------------------------------- bench ledger
    ("ledger", "a claims file that does not exist",
     ["ledger", "--claims", "{tmp}/none.parquet", "--profile", "t", "--out", "{tmp}/c.md", "--figure", "{tmp}/c.png"],
     {}, 2, ["--claims", "none.parquet", "no such file"]),
    ("ledger", "a record set that is not a claims file",
     ["ledger", "--claims", "{records}", "--profile", "t", "--out", "{tmp}/c.md", "--figure", "{tmp}/c.png"],
     {}, 2, ["not a claims file", "claim_id"]),
    ("ledger", "a file that is not Parquet",
     ["ledger", "--claims", "{text}", "--profile", "t", "--out", "{tmp}/c.md", "--figure", "{tmp}/c.png"],
     {}, 2, ["not a Parquet file"]),
    # ---------------------------------------------------------------- bench data
    ("data", "unknown dataset id", ["data", "fetch", "sift2m", "--data-dir", "{tmp}/d"], {}, 2,
     ["unknown dataset id 'sift2m'", "known ids"]),
    ("data", "verify a dataset not on disk", ["data", "verify", "sift1m", "--data-dir", "{tmp}/d"], {}, 2,
     ["sift1m", "missing"]),
    ("data", "a mirror without the file", ["data", "fetch", "sift1m", "--mirror", "{tmp}/mirror", "--data-dir",
                                          "{tmp}/d", "--no-progress"], {}, 2, ["could not fetch", "--mirror"]),
    ("data", "a generated dataset to fetch", ["data", "fetch", "synthetic/sift-like", "--data-dir", "{tmp}/d"], {}, 2,
     ["nothing to fetch"]),
    ("data", "prepare: --spec not JSON", ["data", "prepare", "x", "--spec", "{source", "--profile", "t"], {}, 2,
     ["--spec", "not valid JSON"]),
    ("data", "prepare: a user dataset missing keys",
     ["data", "prepare", "x", "--spec", '{"source": "user", "kind": "vectors", "base": "b.u8bin"}', "--profile", "t",
      "--data-dir", "{tmp}/d"], {}, 2, ["source: user", "missing format, queries"]),
    # ---------------------------------------------------------------- bench loaders ddp-rank
    ("ddp-rank", "not started by torchrun", [*RANK], {}, 2, ["RANK", "not set", "torchrun"]),
    ("ddp-rank", "RANK outside WORLD_SIZE", [*RANK], {**TORCHRUN, "RANK": "3", "WORLD_SIZE": "2"}, 2,
     ["RANK=3 is outside WORLD_SIZE=2"]),
    ("ddp-rank", "MASTER_PORT not a number", [*RANK], {**TORCHRUN, "MASTER_PORT": "http"}, 2, ["must be integers"]),
    ("ddp-rank", "a bundle that does not exist",
     ["loaders", "ddp-rank", "--bundle", "{tmp}/none/bundle.json", "--loader", "ir_datasets", "--out-dir", "{tmp}/r"],
     TORCHRUN, 2, ["--bundle", "not a bundle.json"]),
    ("ddp-rank", "an unknown loader", [*RANK[:4], "--loader", "redis", *RANK[6:]], TORCHRUN, 2, ["unknown loader"]),
    ("ddp-rank", "--steps 0", [*RANK, "--steps", "0"], TORCHRUN, 2, ["--steps", "must be >= 1"]),
    ("ddp-rank", "a rendezvous that never completes", [*RANK, "--timeout-s", "2", "--steps", "1", "--max-length", "16"],
     {**TORCHRUN, "WORLD_SIZE": "2", "MASTER_PORT": "{free_port}"}, 2, ["did not meet", "within 2 s"]),
    # ---------------------------------------------------------------- bench windve serve
    ("windve serve", "a port already in use", [*SERVE, "--port", "{port}"], {}, 2, ["port", "{port}"]),
    ("windve serve", "a queue depth of 0", [*SERVE, "--acc-depth", "0"], {}, 2, ["depth"]),
    ("windve serve", "a model folder that does not exist", [*SERVE, "--model", "{tmp}/no-model"], {}, 2,
     ["no-model"]),
    ("windve serve", "an unknown accelerator pair", ["windve", "serve", "--emulate", "h100-epyc"], {}, 2,
     ["invalid choice: 'h100-epyc'"]),
    ("windve serve", "--port out of range", [*SERVE, "--port", "70000"], {}, 2, ["port"]),
]


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """The files the placeholders name (nothing a step would accept as valid data)."""
    import pandas as pd

    from bench.core.measuring import records
    from bench.data import synthetic
    from bench.loaders.system import bert_cat as M, collection as C

    tmp = tmp_path_factory.mktemp("doors")
    (tmp / "manifest.json").write_text(json.dumps({"name": "tiny-sift", "kind": "vectors", "files": {}}))
    for name in ("index.faiss", "graph.ibin", "trace.parquet"):
        (tmp / name).write_bytes(b"\0")
    records.write(tmp / "records.parquet", pd.DataFrame({"x": [1.0]}), {"profile": "t"})
    (tmp / "text.txt").write_text("not a table\n")
    C.build_bundle(synthetic.msmarco_like(40, 6, seed=3, n_topics=4, vocab_size=200), tmp / "bundle", doc_words=20,
                   filler_docs=20, seed=3)
    M.save_checkpoint("minilm", 1, tmp / "bundle" / "model", seed=0)
    good = _good_dataset(tmp)
    (tmp / "folder.parquet").mkdir()
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    yield {"tmp": str(tmp), "manifest": str(tmp / "manifest.json"), "index": str(tmp / "index.faiss"),
           "graph": str(tmp / "graph.ibin"), "trace": str(tmp / "trace.parquet"),
           "records": str(tmp / "records.parquet"), "text": str(tmp / "text.txt"),
           "bundle": str(tmp / "bundle" / C.BUNDLE), "port": str(busy.getsockname()[1]), "free_port": str(free),
           **good}
    busy.close()


def _good_dataset(tmp) -> dict:
    """A real prepared dataset and its index; a truncated copy of the index; a copy of the dataset whose base
    file was changed after its manifest was written."""
    import shutil

    from bench.ann import ivf
    from bench.data import prepared

    spec = {"source": "synthetic/sift-like", "n_base": 600, "n_query": 5, "gt_k": 10}
    m = prepared.prepare("tiny-sift", spec, profile="t", data_dir=tmp / "data", seed=1)
    index = ivf.save(ivf.build(prepared.load_vectors(m).base, nlist=8, m=8, seed=1), tmp / "good.faiss")
    raw = Path(index).read_bytes()
    (tmp / "short.faiss").write_bytes(raw[: len(raw) // 2])
    changed = tmp / "changed"
    shutil.copytree(Path(m).parent, changed)
    manifest = json.loads((changed / "manifest.json").read_text())
    for entry in manifest["files"].values():
        entry["path"] = str(changed / Path(entry["path"]).name)
    (changed / "manifest.json").write_text(json.dumps(manifest))
    base = changed / Path(manifest["files"]["base"]["path"]).name
    data = bytearray(base.read_bytes())
    data[-1] ^= 0xFF
    base.write_bytes(bytes(data))
    return {"good_manifest": str(m), "good_index": str(index), "short_index": str(tmp / "short.faiss"),
            "changed_manifest": str(changed / "manifest.json")}


def _fill(text: str, place: dict) -> str:
    for k, v in place.items():
        text = text.replace("{" + k + "}", v)
    return text


@pytest.mark.parametrize("door, case, argv, env, code, words", CASES, ids=[f"{d}: {c}" for d, c, *_ in CASES])
def test_bad_input_gets_a_short_error_naming_it(door, case, argv, env, code, words, place, capsys, monkeypatch):
    for k in TORCHRUN:
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, _fill(v, place))
    try:
        rc = cli.main([_fill(a, place) for a in argv])
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc == code, text
    assert "Traceback" not in text, text
    for w in words:
        assert _fill(w, place) in text, text
    assert len(out.err.strip().splitlines()) <= 6 or "usage:" in out.err, out.err


def test_a_bug_is_one_line_unless_debug(monkeypatch, capsys):
    """Not bad input but a bug: one line naming it and where, exit 1; --debug shows the traceback."""
    from bench.data import cli as data_cli

    monkeypatch.setattr(data_cli, "_list", lambda a: 1 / 0)
    assert cli.main(["data", "list"]) == 1
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError" in err and "--debug" in err and "Traceback" not in err
    with pytest.raises(ZeroDivisionError):
        cli.main(["--debug", "data", "list"])


def table() -> str:
    """The cases as the Markdown table of docs/bad-inputs.md."""
    lines = ["# Bad inputs and what each door answers", "",
             "Every command checks what it is given before any work and answers bad input with one short "
             "`bench: error: ...` line (exit 2) naming the culprit; argparse's own errors exit 2 too. A bug "
             "(anything else) prints one line and where, exit 1; `--debug` or `BENCH_DEBUG=1` shows its "
             "traceback. This table is the test `tests/test_doors.py` (regenerate it with "
             "`python -m tests.test_doors > docs/bad-inputs.md`).", "",
             "| door | bad input | command | exit | the message contains |", "|---|---|---|---|---|"]
    for door, case, argv, env, code, words in CASES:
        cmd = " ".join(["bench", *argv]).replace("|", "\\|")
        envs = " ".join(f"{k}={v}" for k, v in env.items() if v != TORCHRUN.get(k))
        cmd = f"{envs} {cmd}".strip() if env else cmd
        if len(cmd) > 90:
            cmd = cmd[:87] + "..."
        lines.append(f"| {door} | {case} | `{cmd}` | {code} | {'; '.join(f'`{w}`' for w in words)} |")
    return "\n".join(lines) + "\n"


def test_docs_list_every_case(repo):
    assert (repo / "docs" / "bad-inputs.md").read_text() == table(), \
        "docs/bad-inputs.md is stale: python -m tests.test_doors > docs/bad-inputs.md"


if __name__ == "__main__":
    print(table(), end="")
