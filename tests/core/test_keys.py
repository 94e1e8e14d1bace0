"""One source for a study's parameters (issue 31): the JSON Schema generated from typed declarations
(bench.core.declaring.keys) validates, fills defaults and names a bad key in the same words as before."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

import pytest

from bench.core.declaring import config, keys, params
from bench.core.base.errors import ConfigError


@dataclass(frozen=True)
class Inner:
    """A nested section."""

    n: int = keys.key(4, minimum=1, description="how many")
    kind: Literal["a", "b"] = keys.key("a")
    cap: float | None = keys.key(None, exclusive_minimum=0)
    seed: int | None = keys.key(minimum=0)          # optional, no default: absent is None, null refused


@dataclass(frozen=True)
class Section:
    """A made-up study section."""

    enabled: bool = keys.key(True)
    sizes: tuple[int, ...] = keys.key([1, 2], items={"minimum": 1}, min_items=1)
    inner: Inner = keys.key({})
    per: dict[str, Inner] = keys.key({})
    name: str = keys.key()                          # required


def _validate(section):
    schema = keys.study_section_schema(Section, "a made-up section")
    section = config._coerce(section, schema)
    config._validate(section, schema, "made_up")
    return section


def test_the_schema_follows_the_hints_and_the_keys():
    s = keys.section_schema(Section)
    p = s["properties"]
    assert s["additionalProperties"] is False and s["required"] == ["name"]
    assert p["sizes"] == {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1, "default": [1, 2]}
    inner = p["inner"]["properties"]
    assert inner["kind"] == {"enum": ["a", "b"], "default": "a"}
    assert inner["cap"]["type"] == ["number", "null"], "a None default allows null"
    assert inner["seed"]["type"] == "integer", "optional without a default: absent, never null"
    assert p["per"]["additionalProperties"]["additionalProperties"] is False
    assert keys.declares_keys(Section) and not keys.declares_keys(type("X", (), {}))


def test_defaults_fill_and_build_the_typed_parameters():
    filled = _validate({"name": "x", "per": {"d": {"n": 2}}})
    assert filled["inner"] == {"n": 4, "kind": "a", "cap": None} and filled["per"]["d"]["kind"] == "a"
    built = params.build(Section, filled)
    assert built.inner.seed is None and built.sizes == (1, 2) and built.per["d"].n == 2


@pytest.mark.parametrize("section,words", [
    ({"name": "x", "inner": {"n": 0}}, "invalid config at 'made_up.inner.n': 0 is less than the minimum of 1\n"
                                       "  expected: how many"),
    ({"name": "x", "inner": {"kind": "c"}}, "allowed values: a, b"),
    ({"name": "x", "bogus": 1}, "unknown key 'bogus'\n  allowed keys here: enabled, inner, name, per, sizes"),
    ({"name": "x", "inner": {"seed": None}}, "made_up.inner.seed"),
    ({}, "'name' is a required property"),
])
def test_a_bad_key_is_named_as_before(section, words):
    with pytest.raises(ConfigError) as e:
        _validate(section)
    assert words in str(e.value)


def test_strings_from_the_command_line_are_coerced():
    assert _validate({"name": "x", "enabled": "false", "inner": {"n": "3"}})["inner"]["n"] == 3


def test_a_mutable_default_is_never_shared():
    f = {f.name: f for f in dataclasses.fields(Section)}["sizes"]
    assert f.default is dataclasses.MISSING and f.metadata["key"]["default"] == [1, 2]


def test_studies_declaring_keys_have_no_schema_file_and_the_cli_prints_theirs():
    declared = [s for s in config.section_names() if config.declared_params(s) is not None]
    assert {"ivf_recall", "chameleon"} <= set(declared)
    for s in declared:
        assert not (config.experiments_dir() / "schema" / f"{s}.yaml").exists()
    r = subprocess.run([sys.executable, "-m", "bench", "schema", "ivf-recall"], capture_output=True, text=True)
    assert r.returncode == 0 and '"nprobe"' in r.stdout
    r = subprocess.run([sys.executable, "-m", "bench", "schema", "nope"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("bench: error: schema: no study section 'nope'")


def test_the_top_level_is_declared_as_typed_keys_too():
    """No hand-written schema is left (issue 31): the profile's top level comes from bench.core.declaring.profile, and a
    bad top-level key or dataset key is refused with its path, as before."""
    import pytest

    from bench.core.base.errors import ConfigError

    assert not list(config.experiments_dir().glob("schema*")), "no schema file beside the profiles"
    r = subprocess.run([sys.executable, "-m", "bench", "schema", "profile"], capture_output=True, text=True)
    assert r.returncode == 0 and '"figure_formats"' in r.stdout and '"n_base"' in r.stdout
    cfg = config.validate_profile({"profile": "t", "datasets": {"d": {"source": "synthetic/sift-like"}}})
    assert cfg["seed"] == 20240601 and cfg["datasets"]["d"]["gt_k"] == 100 and cfg["datasets"]["d"]["metric"] == "l2"
    with pytest.raises(ConfigError, match="'datasets.d.n_bse'"):
        config.validate_profile({"profile": "t", "datasets": {"d": {"source": "x", "n_bse": 3}}})
    with pytest.raises(ConfigError, match="'figure_formats'"):
        config.validate_profile({"profile": "t", "figure_formats": ["pdf"]})


def test_a_step_gets_only_the_keys_it_declares_and_using_another_is_named():
    import pickle

    built = params.build(Section, _validate({"name": "x"}))
    p = params.only(built, ("sizes", "inner"), "made_up step scan")
    assert p.sizes == (1, 2) and p.inner.n == 4
    for use in (lambda: int(p.name), lambda: list(p.per), lambda: p.enabled == 1, lambda: f"{p.name}",
                lambda: p.per.get("d"), lambda: bool(p.enabled)):
        with pytest.raises(RuntimeError, match="made_up step scan reads the profile key '(name|per|enabled)' "
                                               "without declaring it"):
            use()
    again = pickle.loads(pickle.dumps(p))    # a step repeated in fresh processes gets the same view
    with pytest.raises(RuntimeError, match="'name'"):
        str(again.name)
    assert set(params.as_dict(p)) == {"sizes", "inner"}, "provenance lists what the step was given"
    assert params.only(built, None, "x") is built
    assert params.select({"a": 1, "b": 2}, ("a",)) == {"a": 1} and params.select({"a": 1}, None) == {"a": 1}
