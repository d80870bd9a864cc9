"""Typed settings from plain mappings: the one validator behind every configuration in chunkwise.

The pipeline configuration (TOML), the ``[models]`` section and each chunker's parameters are frozen
dataclasses. :func:`build` fills one from a mapping, checking every key against the fields (an unknown
key is a :class:`~chunkwise.errors.ConfigError` naming it and the valid names) and every value against
the field's annotation (``int``, ``float``, ``bool``, ``str``, ``Literal``, optional and union types,
lists, string-keyed tables, nested dataclasses). Values from the command line arrive as strings; with
``parse_strings`` they are parsed (``"800"`` for an ``int``, ``"yes"`` for a ``bool``). Range checks
stay with each dataclass (its ``validate`` method), where the meaning of a value is known.
:func:`read_toml` reads the TOML files these mappings come from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from chunkwise.errors import ConfigError

T = TypeVar("T")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def read_toml(path: str | Path, what: str = "the configuration") -> dict[str, Any]:
    """The TOML file at ``path``; :class:`ConfigError` ``"<path>: cannot read <what>: <reason>"`` when it
    cannot be read, is not UTF-8 (TOML's only encoding; the reason gives the byte, its offset and its
    line) or is not TOML."""
    try:
        data = Path(path).read_bytes()
        text = data.decode("utf-8")
        return tomllib.loads(text)
    except OSError as exc:
        reason = exc.strerror or str(exc)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        reason = (
            f"not UTF-8 text (TOML files are UTF-8): byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"(line {line}); save the file as UTF-8"
        )
    except tomllib.TOMLDecodeError as exc:
        reason = str(exc)
    raise ConfigError(f"{path}: cannot read {what}: {reason}")


def build(cls: type[T], data: Any, path: str, base: T | None = None, *, parse_strings: bool = False) -> T:
    """An instance of dataclass ``cls`` from ``data`` (a mapping), over ``base`` when given.

    ``path`` names the mapping in messages (``retrieval``, ``chunking.params``; empty for the top level of
    a configuration, whose keys are then named alone). Nested dataclass fields
    are built over the matching field of ``base``, so a partial table overrides only what it names.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'configuration'}: expected a table, got {data!r}")
    fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f"{path}: unknown" if path else "unknown"
        raise ConfigError(f"{where} setting(s) {', '.join(unknown)}; known: {', '.join(fields)}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, value in data.items():
        inner = getattr(base, key) if base is not None else None
        name = f"{path}.{key}" if path else key
        values[key] = coerce(value, hints[key], name, inner, parse_strings=parse_strings)
    if base is not None:
        return dataclasses.replace(base, **values)  # type: ignore[type-var]
    try:
        return cls(**values)
    except TypeError as exc:  # a required field missing
        raise ConfigError(f"{path}: {exc}") from None


def coerce(value: Any, hint: Any, key: str, base: Any = None, *, parse_strings: bool = False) -> Any:
    """``value`` checked against (and, for numbers and parsed strings, converted to) ``hint``."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if isinstance(hint, types.UnionType) or origin is typing.Union:
        if value is None and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return coerce(value, option, key, base, parse_strings=parse_strings)
            except ConfigError:
                continue
        raise ConfigError(f"{key}: expected {_describe(hint)}, got {value!r}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{key}: {value!r} is not one of {list(args)}")
        return value
    if dataclasses.is_dataclass(hint):
        return build(hint, value, key, base, parse_strings=parse_strings)  # type: ignore[arg-type]
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        items = [coerce(v, args[0], f"{key}[{i}]", parse_strings=parse_strings) for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a table, got {value!r}")
        return {
            str(k): coerce(v, args[1], f"{key}.{k}", parse_strings=parse_strings) for k, v in value.items()
        }
    return _scalar(value, hint, key, parse_strings)


def _scalar(value: Any, hint: Any, key: str, parse_strings: bool) -> Any:
    text = parse_strings and isinstance(value, str)
    if hint is bool:
        if isinstance(value, bool):
            return value
        if text and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if text:
            try:
                return int(value)
            except ValueError:
                pass
    elif hint is float:
        number = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        elif text:
            with contextlib.suppress(ValueError):
                number = float(value)
        if number is not None:
            if math.isfinite(number):  # NaN or infinity makes no size, weight or threshold
                return number
            raise ConfigError(f"{key}: expected a finite number, got {value!r}")
    elif hint is str:
        if isinstance(value, str):
            return value
    elif isinstance(hint, type) and isinstance(value, hint):
        return value
    raise ConfigError(f"{key}: expected {_describe(hint)}, got {value!r}")


def _describe(hint: Any) -> str:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    return str(getattr(hint, "__name__", hint))
