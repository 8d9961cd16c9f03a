"""Strict cattrs converters for the messages that cross a process boundary.

The harness adapter protocol, the demo worker's reports, the demo websocket's messages and the
model provider's payloads are each read in one process from JSON another program wrote. Each
protocol builds its converter with :func:`strict_converter` and registers only its own hooks
(renames, tagged unions) on top.

Why strict: cattrs' default hooks coerce. ``"1"`` becomes ``1``, ``0`` becomes ``False``,
``[]`` becomes ``"[]"`` and ``"abc"`` becomes ``["a", "b", "c"]``. Across a process boundary
such a value is the other program's bug; it is refused, with the field named, instead of being
papered over. :func:`errors` and :func:`first_error` turn cattrs' nested validation error into
``(path, what is wrong)`` pairs, so each protocol words its one-line refusal itself.

A bottom module: it imports only attrs, cattrs and the standard library.
"""

from __future__ import annotations

import math
import types
from typing import Any, Literal, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import is_mapping, is_sequence, list_structure_factory, mapping_structure_factory

__all__ = ["errors", "first_error", "object_hook", "strict_converter"]

#: Each exact type a strict hook accepts, with its name in an error.
_EXACT: dict[type, str] = {int: "an integer", bool: "a boolean", str: "a string"}


def _got(value: Any) -> str:
    return f"got {type(value).__name__} {value!r:.40}"


def _exact(kind: type, name: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {name}, {_got(value)}")
        return value

    return hook


def _number(finite: bool) -> Any:
    name = "a finite number" if finite else "a number"

    def hook(value: Any, _: Any) -> float:
        if type(value) not in (int, float) or (finite and not math.isfinite(value)):
            raise TypeError(f"expected {name}, {_got(value)}")
        return float(value)

    return hook


def _lists(type_: Any, converter: cattrs.Converter) -> Any:
    inner = list_structure_factory(type_, converter)

    def hook(value: Any, t: Any) -> Any:
        if type(value) is not list:
            raise TypeError(f"expected an array, {_got(value)}")
        return inner(value, t)

    return hook


def object_hook(inner: Any) -> Any:
    """``inner`` (a hook that reads a dict, e.g. from ``make_dict_structure_fn``) behind the
    strict check that the value is a JSON object; a protocol wraps its own class hooks in it."""

    def hook(value: Any, t: Any) -> Any:
        if type(value) is not dict:
            raise TypeError(f"expected an object, {_got(value)}")
        return inner(value, t)

    return hook


def strict_converter(
    *, forbid_extra_keys: bool = True, finite_floats: bool = False
) -> cattrs.Converter:
    """A converter that coerces nothing: an ``int``, ``bool`` or ``str`` field takes exactly
    that type, a ``float`` field an integer or a float (``finite_floats``: and not inf or NaN),
    a ``list`` field a list, a class or a ``dict`` field an object (a dict). ``forbid_extra_keys``
    refuses keys a class does not have."""
    converter = cattrs.Converter(forbid_extra_keys=forbid_extra_keys)
    for kind, name in _EXACT.items():
        converter.register_structure_hook(kind, _exact(kind, name))
    converter.register_structure_hook(float, _number(finite_floats))
    converter.register_structure_hook_factory(is_sequence, _lists)
    converter.register_structure_hook_factory(
        is_mapping, lambda t, c: object_hook(mapping_structure_factory(t, c))
    )
    converter.register_structure_hook_factory(
        attrs.has, lambda t: object_hook(converter.gen_structure_attrs_fromdict(t))
    )
    return converter


def _why(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, KeyError):
        return "is missing"
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return f"unknown field(s): {', '.join(sorted(map(str, exc.extra_fields)))}"
    if get_origin(type_) in (Union, types.UnionType):
        choices = [a for a in get_args(type_) if a is not type(None)]
        if len(choices) == 1 and get_origin(choices[0]) is Literal:  # an optional Literal
            type_ = choices[0]
    if get_origin(type_) is Literal:
        return "must be one of " + ", ".join(map(repr, get_args(type_)))
    return str(exc) or type(exc).__name__


def _leaves(exc: BaseException, path: str, type_: Any) -> list[tuple[str, str]]:
    # The walk of cattrs.transform_error, keeping the path and the reason apart.
    found: list[tuple[str, str]] = []
    if isinstance(exc, cattrs.ClassValidationError):
        with_names, without = exc.group_exceptions()
        for sub, name in with_names:
            found += _leaves(sub, f"{path}.{name.name}", name.type)
    elif isinstance(exc, cattrs.IterableValidationError):
        with_indices, without = exc.group_exceptions()
        for sub, index in with_indices:
            found += _leaves(sub, f"{path}[{index.index!r}]", index.type)
    else:
        return [(path, _why(exc, type_))]
    return found + [(path, _why(sub, None)) for sub in without]


def errors(exc: cattrs.BaseValidationError, root: str = "$") -> list[tuple[str, str]]:
    """Every leaf error of ``exc`` as ``(path, what is wrong)``, in order:
    ``("$.closers[0].text", "is missing")``; the path of the value itself is ``root``."""
    return _leaves(exc, root, None)


def first_error(exc: cattrs.BaseValidationError) -> tuple[str | None, str]:
    """The first leaf error of ``exc``: ``(dotted field path, what is wrong)``, the path
    relative to the structured value (``closers[0].text``) or ``None`` for the value itself
    (an unknown key is named in what is wrong)."""
    path, why = errors(exc, root="")[0]
    return path.removeprefix(".") or None, why
