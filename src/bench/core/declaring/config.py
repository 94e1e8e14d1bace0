"""Profiles (experiments/<profile>.yaml) and their JSON Schema validation.

The top-level schema is generated from :class:`bench.core.declaring.profile.Profile`; each study's section is
validated by the schema generated from its typed parameters (:mod:`bench.core.declaring.keys`). Validation fills defaults and names the failing key; an unknown
key or a wrong type fails before any rule runs (the Snakefile calls :func:`validate_profile`).
"""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Mapping

import jsonschema
import yaml

from ..base.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[4]


def experiments_dir() -> Path:
    return Path(os.environ.get("BENCH_EXPERIMENTS_DIR", REPO_ROOT / "experiments"))


def _extend_with_default(validator_class):
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_Validator = _extend_with_default(jsonschema.Draft202012Validator)


def _load_yaml(path: Path) -> Any:
    try:
        with open(path) as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None


def _short(e: jsonschema.ValidationError) -> tuple[list, str]:
    """(extra path, message): what is wrong and what is allowed, in one or two lines."""
    if e.validator == "additionalProperties" and isinstance(e.instance, dict):
        allowed = sorted(e.schema.get("properties", {}))
        extra = sorted(set(e.instance) - set(allowed))
        return extra[:1], f"unknown key {extra[0]!r}\n  allowed keys here: {', '.join(allowed)}"
    if e.validator == "required":
        return [], e.message
    msg = e.message if len(e.message) <= 200 else e.message[:200] + "..."
    allowed = e.schema.get("enum")
    if allowed is not None:
        return [], f"{msg}\n  allowed values: {', '.join(map(str, allowed))}"
    desc = e.schema.get("description")
    return [], msg + (f"\n  expected: {desc}" if desc and len(desc) < 200 else "")


def _validate(instance: Any, schema: Mapping, where: str) -> None:
    errors = sorted(_Validator(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        extra, msg = _short(e)
        key = ".".join(str(p) for p in [where, *e.absolute_path, *extra] if p != "")
        more = f"\n  ({len(errors) - 1} more error(s) after this one)" if len(errors) > 1 else ""
        raise ConfigError(f"invalid config at '{key or '<top>'}': {msg}{more}")


def _coerce(value: Any, schema: Mapping, root: Mapping | None = None) -> Any:
    """Strings where the schema wants a boolean or a number become one: Snakemake's ``--config
    study='{"enabled": false}'`` (or ``datasets='{...}'``) hands nested values over as strings.
    ``$ref`` into the root schema's ``$defs`` is followed (the datasets section uses one)."""
    root = schema if root is None else root
    if isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/$defs/"):
        schema = root.get("$defs", {}).get(schema["$ref"].split("/")[-1], {})
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if isinstance(value, str):
        low = value.strip().lower()
        if "boolean" in types and low in ("true", "false"):
            return low == "true"
        for t, conv in (("integer", int), ("number", float)):
            if t in types:
                try:
                    return conv(value)
                except ValueError:
                    pass
        return value
    if isinstance(value, dict):
        props, extra = schema.get("properties", {}), schema.get("additionalProperties")
        return {k: _coerce(v, props.get(k, extra if isinstance(extra, dict) else {}), root) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(v, schema["items"], root) for v in value]
    return value


def declared_params(study: str) -> type | None:
    """The study's ``Params`` where it declares its keys with :func:`bench.core.declaring.keys.key` (the one source
    of the section's schema), else None."""
    import importlib

    from . import keys
    from .discover import study_names

    if study not in study_names():
        return None
    cls = importlib.import_module(f"bench.{study}.params").Params
    return cls if keys.declares_keys(cls) else None


def _section_description(cls: type) -> str:
    doc = cls.__dict__.get("__doc__") or ""
    return "" if doc.startswith(f"{cls.__name__}(") else " ".join(doc.split("\n\n")[0].split())


def study_schema(study: str) -> dict | None:
    """A study section's JSON Schema, generated from its typed parameters (None: no such study)."""
    from . import keys

    cls = declared_params(study)
    return None if cls is None else keys.study_section_schema(cls, _section_description(cls))


def section_names() -> list[str]:
    """The study sections a profile may hold: every study declaring its keys."""
    from .discover import study_names

    return sorted(s for s in study_names() if declared_params(s) is not None)


def validate_section(study: str, section: Any) -> dict:
    """Validate (and fill defaults of) one study's section of a profile."""
    schema = study_schema(study)
    if schema is None:
        raise ConfigError(f"unknown config section '{study}': no study of that name declares its keys "
                          f"(bench.core.declaring.keys) in src/bench/{study}/params.py")
    section = {} if section is None else _coerce(copy.deepcopy(section), schema)
    _validate(section, schema, study)
    _cross_keys(study, section)
    return section


def _cross_keys(study: str, section: dict) -> None:
    """A study's checks across keys (a schema checks each key alone): ``check(params)`` in its
    ``params.py``, run on the typed parameters whenever its section is validated, so even ``snakemake -n``
    stops on a bad combination before any job."""
    import importlib

    from . import params

    module = importlib.import_module(f"bench.{study}.params")
    check = getattr(module, "check", None)
    if callable(check):
        check(params.build(module.Params, section, study))


def top_schema() -> dict:
    """The JSON Schema of a profile's top level, generated from :class:`bench.core.declaring.profile.Profile` (the
    study sections are added by :func:`validate_profile`)."""
    from . import keys, profile

    return keys.study_section_schema(profile.Profile, _section_description(profile.Profile))


def validate_profile(config: Mapping[str, Any]) -> dict:
    """Validate a whole profile in place of a copy; returns the config with defaults filled."""
    cfg = copy.deepcopy(dict(config))
    top = top_schema()
    studies = section_names()
    # Study sections are validated by their own schema; the top-level schema must not reject them.
    for s in studies:
        top.setdefault("properties", {}).setdefault(s, {"type": "object"})
    cfg = {k: (v if k in studies else _coerce(v, top.get("properties", {}).get(k, {}), top)) for k, v in cfg.items()}
    _validate(cfg, top, "")
    for s in studies:  # every study's section, with its defaults (a study left out runs on its defaults)
        cfg[s] = validate_section(s, cfg.get(s))
    return cfg


def load_profile(path: str | os.PathLike) -> dict:
    cfg = _load_yaml(Path(path))
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: a profile must be a mapping, got {type(cfg).__name__}")
    return validate_profile(cfg)
