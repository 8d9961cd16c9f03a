"""Fast validation of decoded event data, compiled from the attrs classes in :mod:`.events`.

This is rule ``I0`` of spec/invariants.md for the ``data`` object. The validators are built
once, at import, by walking the attrs fields, so the class definitions stay the only source
of truth while the hot path checks plain dicts without building objects.

Unknown keys inside ``data`` are ignored (reserved for optional extensions, spec/log.md);
a key that is present must have the declared type (``null`` is never a valid value).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from . import events

Validator = Callable[[Any, str], None]


class SchemaError(ValueError):
    """``path`` names the offending field, e.g. ``data.reason.kind``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _int(minimum: int | None) -> Validator:
    def check(value: Any, path: str) -> None:
        # bool is an int subclass in Python; JSON true is not a number.
        if type(value) is not int:
            raise SchemaError(path, f"expected an integer, got {_describe(value)}")
        if minimum is not None and value < minimum:
            raise SchemaError(path, f"must be >= {minimum}, got {value}")

    return check


def _str(nonempty: bool) -> Validator:
    def check(value: Any, path: str) -> None:
        if type(value) is not str:
            raise SchemaError(path, f"expected a string, got {_describe(value)}")
        if nonempty and not value:
            raise SchemaError(path, "must not be empty")

    return check


def _bool(value: Any, path: str) -> None:
    if type(value) is not bool:
        raise SchemaError(path, f"expected a boolean, got {_describe(value)}")


def _object(value: Any, path: str) -> None:
    if type(value) is not dict:
        raise SchemaError(path, f"expected an object, got {_describe(value)}")


def _literal(choices: tuple[Any, ...]) -> Validator:
    allowed = frozenset(choices)
    shown = " | ".join(repr(c).replace("'", '"') for c in choices)

    def check(value: Any, path: str) -> None:
        # ``True == 1`` in Python; compare types too so 1 does not pass for true.
        if type(value) not in (str, bool) or value not in allowed:
            raise SchemaError(path, f"expected {shown}, got {_show(value)}")

    return check


def _show(value: Any) -> str:
    if isinstance(value, str | bool | int) and not isinstance(value, float):
        text = repr(value).replace("'", '"')
        return text if len(text) <= 40 else text[:37] + "..."
    return _describe(value)


def _list(item: Validator) -> Validator:
    def check(value: Any, path: str) -> None:
        if type(value) is not list:
            raise SchemaError(path, f"expected an array, got {_describe(value)}")
        for i, element in enumerate(value):
            item(element, f"{path}[{i}]")

    return check


def _tagged_union(options: dict[str, Validator], fallback: Validator | None) -> Validator:
    """Union of object classes told apart by their ``type`` literal (blocks, chunks)."""
    names = " | ".join(f'"{k}"' for k in options)

    def check(value: Any, path: str) -> None:
        _object(value, path)
        tag = value.get("type")
        chosen = options.get(tag) if type(tag) is str else None
        if chosen is not None:
            chosen(value, path)
        elif fallback is not None:
            fallback(value, path)
        else:
            raise SchemaError(f"{path}.type", f"expected {names}, got {_show(tag)}")

    return check


def _for_type(tp: Any, meta: typing.Mapping[str, Any]) -> Validator:
    if tp is int:
        return _int(meta.get("min"))
    if tp is str:
        return _str(bool(meta.get("nonempty")))
    if tp is bool:
        return _bool
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Literal:
        return _literal(args)
    if origin is list:
        return _list(_for_type(args[0], {}))
    if origin is dict:
        return _object
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return _for_type(members[0], meta)
        tagged: dict[str, Validator] = {}
        fallback: Validator | None = None
        for cls in members:
            attrs.resolve_types(cls, globalns=vars(events))
            (tag_type,) = [a.type for a in attrs.fields(cls) if a.name == "type"]
            if typing.get_origin(tag_type) is Literal:
                tagged[typing.get_args(tag_type)[0]] = compile_class(cls)
            else:
                fallback = compile_class(cls)
        return _tagged_union(tagged, fallback)
    if attrs.has(tp):
        return compile_class(tp)
    raise TypeError(f"schema compiler does not know {tp!r}")  # pragma: no cover


def compile_class(cls: type[Any]) -> Validator:
    """Build a validator for a JSON object shaped like the attrs class ``cls``."""
    attrs.resolve_types(cls, globalns=vars(events))
    fields = []
    for a in attrs.fields(cls):
        optional = a.default is None
        fields.append((events.wire_name(a.name), optional, _for_type(a.type, a.metadata)))
    post = getattr(cls, "__attrs_post_init__", None)

    def check(value: Any, path: str) -> None:
        if type(value) is not dict:
            raise SchemaError(path, f"expected an object, got {_describe(value)}")
        for name, optional, validate in fields:
            if name in value:
                validate(value[name], f"{path}.{name}")
            elif not optional:
                raise SchemaError(f"{path}.{name}", "missing")
        if post is not None:
            _check_cross_field(cls, value, path)

    return check


def _check_cross_field(cls: type[Any], value: dict[str, Any], path: str) -> None:
    # The only cross-field rule of v1 (TurnEndReason.__attrs_post_init__), restated on dicts.
    if cls is events.TurnEndReason and (value["kind"] == "error") != ("error" in value):
        raise SchemaError(f"{path}.error", 'required when kind is "error", and only then')


#: type -> validator of ``data`` for that type.
DATA_VALIDATORS: Final[dict[str, Validator]] = {
    name: compile_class(cls) for name, cls in events.DATA_CLASSES.items()
}


def validate_data(type_: str, data: Any) -> None:
    """Raise :class:`SchemaError` unless ``data`` is valid for event type ``type_``."""
    validator = DATA_VALIDATORS.get(type_)
    if validator is None:
        raise SchemaError("type", f"unknown event type {_show(type_)}")
    validator(data, "data")
