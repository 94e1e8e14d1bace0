"""Profiles: the shipped ones validate; unknown keys and wrong types fail naming the key."""
from __future__ import annotations

import pytest
import yaml

from bench.core.declaring import config
from bench.core.base.errors import ConfigError


@pytest.mark.parametrize("profile", ["tiny", "small", "paper"])
def test_shipped_profiles_validate(repo, profile):
    cfg = config.load_profile(repo / "experiments" / f"{profile}.yaml")
    assert cfg["profile"] == profile and cfg["threads"] >= 1
    assert cfg["ivf_recall"]["warmup"] >= 0  # defaults filled
    for study in cfg["ivf_recall"]["datasets"]:
        assert study in cfg["datasets"]


def test_unknown_key_and_wrong_type_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"at 'ivf_recall.nprobes': unknown key 'nprobes'") as e:
        config.validate_profile({"profile": "x", "ivf_recall": {"nprobes": [1]}})
    assert "allowed keys here: datasets, enabled" in str(e.value) and len(str(e.value).splitlines()) <= 15
    with pytest.raises(ConfigError, match=r"at 'threads': 'two' is not of type 'integer'"):
        config.validate_profile({"profile": "x", "threads": "two"})
    with pytest.raises(ConfigError, match=r"at 'datasets.a': 'source' is a required property"):
        config.validate_profile({"profile": "x", "datasets": {"a": {}}})
    with pytest.raises(ConfigError, match=r"at 'colour': unknown key 'colour'"):
        config.validate_profile({"profile": "x", "colour": 1})
    p = tmp_path / "p.yaml"
    p.write_text("profile: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        config.load_profile(p)


def test_defaults_are_filled():
    cfg = config.validate_profile({"profile": "x"})
    assert cfg["seed"] == 20240601 and cfg["ivf_recall"]["k"] == [1, 10, 100]


def test_command_line_strings_are_coerced_to_the_schema_type():
    """snakemake --config study='{"enabled": false}' hands nested values over as strings."""
    cfg = config.validate_profile({"profile": "x", "ivf_recall": {"enabled": "false", "repeats": "3"}})
    assert cfg["ivf_recall"]["enabled"] is False and cfg["ivf_recall"]["repeats"] == 3


def test_command_line_strings_are_coerced_in_the_datasets_section_too():
    """`--config datasets='{"a": {"n_base": "100"}}'`: the datasets' schema ($ref into $defs) is followed."""
    cfg = config.validate_profile({"profile": "x", "threads": "3", "datasets": {
        "a": {"source": "synthetic/sift-like", "n_base": "100", "n_query": " 7 ", "gt_k": "5"}}})
    assert cfg["threads"] == 3
    a = cfg["datasets"]["a"]
    assert (a["n_base"], a["n_query"], a["gt_k"]) == (100, 7, 5) and all(type(a[k]) is int for k in ("n_base", "gt_k"))
    assert config.validate_profile({"profile": "x", "datasets": {"a": {"source": "user", "base": "7"}}})[
        "datasets"]["a"]["base"] == "7"    # a string where the schema wants one stays a string
    with pytest.raises(ConfigError, match=r"at 'datasets.a.n_base': 'lots' is not of type 'integer'") as e:
        config.validate_profile({"profile": "x", "datasets": {"a": {"source": "synthetic/sift-like",
                                                                     "n_base": "lots"}}})
    assert len(str(e.value).splitlines()) <= 3


def test_a_studys_cross_key_check_runs_when_its_section_is_validated():
    """A combination each key's schema allows but the study cannot run (WindVE's bursty open loop with a
    negative quiet rate) stops at validation, before any job."""
    from bench.core.base.errors import ConfigError
    from bench.core.declaring import config

    with pytest.raises(ConfigError, match="burst_factor x burst_s"):
        config.validate_section("windve", {"openloop": {"burst_s": 1.0, "period_s": 2.0, "burst_factor": 4.0}})
