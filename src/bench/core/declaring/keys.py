"""One source for a study's parameters: each key of a profile section is declared once, as a
field of the study's frozen ``Params`` dataclass with its type hint and a :func:`key` holding its default,
bounds and description. The section's JSON Schema (validation, defaults, `bench config schema` for docs and
editors) is generated from those declarations by :func:`section_schema`; no hand-written schema is kept.

    @dataclass(frozen=True)
    class Index:
        nlist: int = key(128, minimum=1, description="inverted lists")
        kind: Literal["ivfflat", "ivfpq"] = key("ivfflat")
        train_size: int | None = key(minimum=1)          # optional: absent means None

A field's JSON Schema comes from its hint: ``bool`` boolean, ``int`` integer, ``float`` number, ``str``
string, ``Literal[...]`` enum, ``tuple[X, ...]`` array of X, ``dict[str, X]`` object of X, a dataclass a
nested section (``additionalProperties: false``), ``X | None`` X or, where the default or an enum value is
None, null too;
``Any`` anything (``nullable=True`` allows null without a None default). ``key``'s keywords add JSON Schema keywords in snake_case (``min_items``,
``exclusive_minimum``, ``items={...}`` merged into the element's schema). A field without a default is
required unless its hint is optional. The value itself is stored in the field's metadata only, so fields
never need ordering and mutable defaults (lists, mappings) are safe.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, Mapping

from .params import _hints, _optional

_MISSING = object()
_CAMEL = {"min_items": "minItems", "max_items": "maxItems", "unique_items": "uniqueItems",
          "exclusive_minimum": "exclusiveMinimum", "exclusive_maximum": "exclusiveMaximum",
          "min_length": "minLength", "max_length": "maxLength", "min_properties": "minProperties"}
_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string"}


def key(default: Any = _MISSING, *, description: str | None = None, **schema: Any) -> Any:
    """A profile key's declaration: its default (none: required, or None where the hint is optional),
    a description and JSON Schema keywords (snake_case). Used as a dataclass field's default."""
    meta = {_CAMEL.get(k, k): v for k, v in schema.items()}
    if description:
        meta["description"] = description
    if default is not _MISSING:
        meta["default"] = default
    return dataclasses.field(metadata={"key": meta})


def _split_optional(hint: Any) -> tuple[Any, bool]:
    """(X, True) for ``X | None``, else (hint, False): :func:`bench.core.declaring.params._optional`'s reading."""
    inner = _optional(hint)
    return (hint, False) if inner is None else (inner, True)


def type_schema(hint: Any, nullable: bool = False) -> dict:
    """The JSON Schema of a type hint (without a key's own keywords)."""
    inner, optional = _split_optional(hint)
    if optional:
        return type_schema(inner, nullable)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        out = section_schema(hint)
        return {**out, "type": ["object", "null"]} if nullable else out
    if origin is Literal:
        return {"enum": [*args, None] if nullable and None not in args else list(args)}
    if hint in _SCALARS:
        t = _SCALARS[hint]
        return {"type": [t, "null"] if nullable else t}
    if origin is tuple and args and args[-1] is Ellipsis:
        out = {"type": "array", "items": type_schema(args[0])}
    elif origin in (dict, Mapping, typing.Mapping) or hint in (dict, Mapping):
        out = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            out["additionalProperties"] = type_schema(args[1])
    elif hint is Any:
        return {}
    else:
        raise TypeError(f"no JSON Schema for the type hint {hint!r}")
    if nullable:
        out["type"] = [out["type"], "null"]
    return out


def field_schema(f: dataclasses.Field, hint: Any) -> dict:
    meta = dict(f.metadata.get("key", {}))
    explicit = meta.pop("nullable", None)
    allows_none = meta.get("default", _MISSING) is None or None in meta.get("enum", ())
    nullable = _split_optional(hint)[1] and (allows_none if explicit is None else bool(explicit))
    out = type_schema(hint, nullable)
    items = meta.pop("items", None)
    if items is not None:
        out["items"] = {**out.get("items", {}), **items}
    extra = meta.pop("additionalProperties", None)
    if extra is not None:
        out["additionalProperties"] = extra if isinstance(extra, bool) else {**out.get("additionalProperties", {}),
                                                                             **extra}
    out.update(meta)
    return out


def required(cls: type) -> list[str]:
    """The keys of ``cls`` with no default whose hint is not optional."""
    return [f.name for f in dataclasses.fields(cls)
            if "default" not in f.metadata.get("key", {}) and not _split_optional(_hints(cls)[f.name])[1]]


def section_schema(cls: type, description: str | None = None) -> dict:
    """The JSON Schema of a dataclass section: one property per field, nothing else allowed."""
    hints = _hints(cls)
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if description:
        out["description"] = description
    out["properties"] = {f.name: field_schema(f, hints[f.name]) for f in dataclasses.fields(cls)}
    req = required(cls)
    if req:
        out["required"] = req
    return out


def declares_keys(cls: type) -> bool:
    """Whether ``cls`` declares its keys with :func:`key` (every field; a dataclass without them keeps a
    schema file of its own)."""
    return dataclasses.is_dataclass(cls) and all("key" in f.metadata for f in dataclasses.fields(cls))


def study_section_schema(cls: type, description: str) -> dict:
    """A study's whole section: its ``Params`` with the schema dialect named (for editors)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **section_schema(cls, description)}
