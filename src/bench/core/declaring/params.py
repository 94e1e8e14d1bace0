"""Typed parameters: a study's profile section as a frozen dataclass, built once after validation.

A study's ``params.py`` declares ``Params`` (and nested sections) as frozen dataclasses, one field per key
of its profile section, each with its type hint and a :func:`bench.core.declaring.keys.key` holding its default,
bounds and description: the one source the section's JSON Schema is generated from. The validation
(:mod:`bench.core.declaring.config`) fills the defaults, then :func:`build` turns the section into the dataclass.
A field's type hint says how its value is built:

- a dataclass: the nested section;
- ``dict[str, X]`` with a dataclass ``X``: each value built as ``X``;
- ``tuple[X, ...]``: the list as a tuple (of built ``X`` where ``X`` is a dataclass);
- ``X | None``: ``None`` where the key is absent (a schema key without a default);
- anything else: the value as validated.
"""
from __future__ import annotations

import copyreg
import dataclasses
import functools
import types
import typing
from typing import Any, Mapping

from ..base.errors import ConfigError


# A built Params holds its dict sections as read-only MappingProxyType views: pickled as their dict, so
# a step repeated in fresh processes (bench.core.measuring.step) can be given its typed parameters.
def frozen_mapping(d: dict) -> Mapping:
    return types.MappingProxyType(d)


copyreg.pickle(types.MappingProxyType, lambda m: (frozen_mapping, (dict(m),)))


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _optional(hint: Any) -> Any | None:
    """``X`` of ``X | None`` (or ``Optional[X]``), else None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
    return None


def _value(hint: Any, value: Any, where: str) -> Any:
    inner = _optional(hint)
    if inner is not None:
        return None if value is None else _value(inner, value, where)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, where)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return types.MappingProxyType({k: build(args[1], v, f"{where}.{k}") for k, v in value.items()})
    if origin is tuple and args and args[-1] is Ellipsis:
        return tuple(_value(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        return types.MappingProxyType(dict(value))
    return value


def build(cls: type, section: Mapping[str, Any], where: str | None = None) -> Any:
    """``cls`` (a frozen dataclass) from a validated section: every field from the key of its name."""
    where = where or cls.__name__
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(section).__name__}")
    hints = _hints(cls)
    unknown = set(section) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
    kwargs = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if f.name not in section:
            if _optional(hint) is None:
                raise ConfigError(f"{where}.{f.name}: missing (the schema gives it no default)")
            kwargs[f.name] = None
            continue
        kwargs[f.name] = _value(hint, section[f.name], f"{where}.{f.name}")
    return cls(**kwargs)


def as_dict(obj: Any) -> Any:
    """A built ``Params`` back to plain JSON-able values (for provenance)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: as_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not isinstance(getattr(obj, f.name), Unread)}
    if isinstance(obj, Mapping):
        return {k: as_dict(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [as_dict(v) for v in obj]
    return obj


class Unread:
    """A key withheld from a step that did not declare it (:func:`only`): any use of it is a bug of the
    step's declaration, named as such (a value read silently would be one its job's params did not hold)."""

    def __init__(self, key: str, where: str) -> None:
        object.__setattr__(self, "_what", f"{where} reads the profile key {key!r} without declaring it in its "
                                          f"step's keys=(...)")

    def _fail(self, *a, **k):
        raise RuntimeError(object.__getattribute__(self, "_what"))

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        self._fail()

    def __reduce__(self):
        what = object.__getattribute__(self, "_what")
        return (_unread_from, (what,))

    def __repr__(self) -> str:
        return "<unread>"

    __bool__ = __int__ = __float__ = __index__ = __iter__ = __len__ = __getitem__ = __contains__ = _fail
    __eq__ = __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = __mul__ = __rmul__ = __hash__ = _fail
    __sub__ = __rsub__ = __truediv__ = __rtruediv__ = __str__ = __format__ = _fail


def _unread_from(what: str) -> Unread:
    u = Unread.__new__(Unread)
    object.__setattr__(u, "_what", what)
    return u


def only(obj: Any, keys: tuple[str, ...] | None, where: str) -> Any:
    """``obj`` (a built ``Params``) with every top-level field outside ``keys`` replaced by :class:`Unread`
    (``keys`` None: ``obj`` itself)."""
    if keys is None:
        return obj
    withheld = {f.name: Unread(f.name, where) for f in dataclasses.fields(obj) if f.name not in keys}
    return dataclasses.replace(obj, **withheld)


def select(section: Mapping[str, Any], keys: tuple[str, ...] | None) -> dict:
    """The part of a section a step reads (all of it where ``keys`` is None)."""
    return dict(section) if keys is None else {k: section[k] for k in keys if k in section}
