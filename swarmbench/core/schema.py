"""Typed JSON records: one dataclass per object of run.json, its key table derived from its fields.

A `Record` is a dataclass whose fields are the object's keys, in the order written. Its type hints
are the schema: reading checks every key that is present against its field's type (nested records,
lists and string-keyed maps included) and raises InputError naming the file and the key path
(`worker_cpu.per_worker[0].mean_percent`), because a run filed under the wrong worker count would
silently bend a scaling fit. A missing key reads as the field's default (older harness versions,
hand-made folders); a key this version does not know is kept in `extra` and written back unchanged.

There is no second list of keys to keep equal by hand: the dataclass is the one list. Standard
library only (the plugin, the runner and the analysis all read and write through it).
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Self

from swarmbench.core.errors import InputError

CHOICES = "choices"
"""Field metadata: the strings a field may hold (run status, mode, ...)."""

MINIMUM = "minimum"
"""Field metadata: the smallest number a field may hold (counts are never negative)."""


def choice(values: tuple[str, ...], default: Any = None) -> Any:
    """A string field that must be one of VALUES when present."""
    return field(default=default, metadata={CHOICES: values})


def count(default: Any = None) -> Any:
    """An integer field that must not be negative when present."""
    return field(default=default, metadata={MINIMUM: 0})


@dataclass
class Record:
    """Base of every run.json object; subclasses are dataclasses whose fields all have defaults."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True, repr=False)
    """Keys this version does not know, kept as read and written back after the known ones."""

    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()
    """Keys left out of the JSON when None (optional sections); every other key is always written."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None and f.name in self.OMIT_WHEN_NONE:
                continue
            out[f.name] = _dump(value)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str | Path = "run.json", path: str = "") -> Self:
        """DATA type-checked against the fields; InputError naming WHERE and the key PATH."""
        if not isinstance(data, dict):
            raise InputError(where, f"{_at(path)}should be an object, got {_show(data)}")
        hints = _hints(cls)
        values: dict[str, Any] = {}
        known = set()
        for f in fields(cls):
            if f.name == "extra":
                continue
            known.add(f.name)
            value = data.get(f.name)
            if value is None:
                continue
            key = f"{path}.{f.name}" if path else f.name
            value = _load(value, hints[f.name], where, key)
            _check_metadata(f.metadata, value, where, key)
            values[f.name] = value
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra)


def _hints(cls: type) -> dict[str, Any]:
    """The fields' types, resolved once per class (annotations are strings under __future__)."""
    cached = cls.__dict__.get("_hints_cache")
    if cached is None:
        cached = typing.get_type_hints(cls)
        cls._hints_cache = cached  # type: ignore[attr-defined]
    return cached


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def _at(path: str) -> str:
    return f'"{path}" ' if path else ""


def _show(value: Any) -> str:
    return json.dumps(value)[:40]


_DESCRIBE = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _load(value: Any, hint: Any, where: str | Path, path: str) -> Any:
    """VALUE checked against the type HINT (None already handled by the caller)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:  # None inside a list or map (a missing figure)
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _load(value, options[0], where, path)
        for option in options:  # e.g. int | str: the first that fits
            try:
                return _load(value, option, where, path)
            except InputError:
                continue
        raise InputError(where, f"{_at(path)}has an unexpected type, got {_show(value)}")
    if hint is Any:
        return value
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json(value, where, path)
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise InputError(where, f"{_at(path)}should be a list, got {_show(value)}")
        item = args[0] if args else Any
        loaded = [_load(v, item, where, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(loaded) if origin is tuple else loaded
    if origin is dict:
        if not isinstance(value, dict):
            raise InputError(where, f"{_at(path)}should be an object, got {_show(value)}")
        item = args[1] if len(args) == 2 else Any
        return {str(k): _load(v, item, where, f"{path}.{k}") for k, v in value.items()}
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(where, f"{_at(path)}should be a number, got {_show(value)}")
        return float(value)
    if hint in (int, str, bool):
        # bool is an int in Python; `"users": true` is still a malformed file.
        if isinstance(value, bool) != (hint is bool) or not isinstance(value, hint):
            raise InputError(where, f"{_at(path)}should be {_DESCRIBE[hint]}, got {_show(value)}")
        return value
    raise TypeError(f"schema: unsupported type {hint!r} at {path}")  # a programming error, not input


def _check_metadata(meta: Any, value: Any, where: str | Path, path: str) -> None:
    allowed = meta.get(CHOICES)
    if allowed is not None and value not in allowed:
        raise InputError(where, f'"{path}" should be one of {", ".join(allowed)}, got "{value}"')
    low = meta.get(MINIMUM)
    if low is not None and value < low:
        raise InputError(where, f'"{path}" should not be negative, got {value}')
