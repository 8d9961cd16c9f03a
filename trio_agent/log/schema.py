"""Validation of decoded event data, compiled from the attrs classes in :mod:`.events`.

This is rule ``I0`` of spec/invariants.md for the ``data`` object, in two forms made from the
same walk of the attrs fields, so the class definitions stay the only source of truth:

* the validators (:data:`DATA_VALIDATORS`, :func:`validate_data`), built at import, which say
  what is wrong and where;
* the source of :mod:`.data_predicates` (:func:`predicates_source`): one straight-line
  yes/no predicate per event type, which the hot path runs on every line.

Reading a log imports only the predicates; this module (and with it the classes) is
imported when a line is bad, to say why (``data_predicates.why_invalid``).

Unknown keys inside ``data`` are ignored (reserved for optional extensions, spec/log.md);
a key that is present must have the declared type (``null`` is never a valid value).
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from . import events
from .envelope import MAX_INTEGER
from .errors import SchemaError as SchemaError

Validator = Callable[[Any, str], None]


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
        if not -MAX_INTEGER <= value <= MAX_INTEGER:
            raise SchemaError(path, f"must be at most 2^53 - 1 in size, got {value}")

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


# -- fast predicates -----------------------------------------------------------------------
#
# The validators above explain what is wrong; they are too slow to run on every line of a
# 200 MB log. For the hot path each class is also compiled into one straight-line predicate
# that only answers yes or no, written out as Python source: the module
# trio_agent/log/data_predicates.py (scripts/make-data-predicates.py writes it, and a test
# fails when it is not what this compiler makes of the classes now). Reading a log imports
# that module and never these classes, whose definition costs more start-up than the whole
# check of a short log. A "no" is then explained by the validator, so both always agree on
# what is valid (a test checks that).


def _literal_source(value: Any) -> str:
    """A literal of a ``Literal`` choice as the formatter writes it: a JSON-like string in
    double quotes, or ``True``/``False``."""
    return repr(value) if isinstance(value, bool) else json.dumps(value)


class _PredicateCompiler:
    def __init__(self) -> None:
        self.parts: list[str] = []  # the bound constants and functions, in order
        self.cache: dict[Any, str] = {}
        self.counter = 0

    def _bind(self, source: str, prefix: str) -> str:
        self.counter += 1
        name = f"_{prefix}{self.counter}"
        self.parts.append(f"{name}: Final = {source}\n")
        return name

    def expr(self, tp: Any, meta: typing.Mapping[str, Any], v: str) -> str:
        """A Python expression that is true when ``v`` is a valid value of type ``tp``."""
        if tp is int:
            low = meta.get("min")
            low = -MAX_INTEGER if low is None else low
            return f"(type({v}) is int and {low} <= {v} <= {MAX_INTEGER})"
        if tp is str:
            return (
                f'(type({v}) is str and {v} != "")' if meta.get("nonempty") else f"type({v}) is str"
            )
        if tp is bool:
            return f"type({v}) is bool"
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is Literal:
            listed = ", ".join(_literal_source(a) for a in args)
            choices = self._bind(f"frozenset(({listed},))", "choices")
            return f"(type({v}) in (str, bool) and {v} in {choices})"
        if origin is dict:
            return f"type({v}) is dict"
        if origin is list:
            item = self.function(args[0])
            return f"(type({v}) is list and all(map({item}, {v})))"
        if origin in (typing.Union, types.UnionType):
            members = [a for a in args if a is not type(None)]
            if len(members) == 1:
                return self.expr(members[0], meta, v)
            return f"{self.function(tp)}({v})"
        return f"{self.function(tp)}({v})"

    def function(self, tp: Any) -> str:
        """The name of the predicate function for ``tp`` (written once)."""
        if tp in self.cache:
            return self.cache[tp]
        name = f"_ok{self.counter + 1}"
        self.counter += 1
        self.cache[tp] = name
        if attrs.has(tp):
            source = self._class_source(tp, name)
        elif typing.get_origin(tp) in (typing.Union, types.UnionType):
            source = self._union_source(tp, name)
        else:
            source = f"def {name}(v: Any) -> bool:\n    return {self.expr(tp, {}, 'v')}\n"
        self.parts.append(source)
        return name

    def _class_source(self, cls: type[Any], name: str) -> str:
        attrs.resolve_types(cls, globalns=vars(events))
        lines = [
            f"# events.{cls.__name__}",
            f"def {name}(d: Any) -> bool:",
            "    if type(d) is not dict:",
            "        return False",
        ]
        for a in attrs.fields(cls):
            key = json.dumps(events.wire_name(a.name))
            test = self.expr(a.type, a.metadata, "v")
            if a.default is None:  # optional: absent is fine
                lines.append(f"    v = d.get({key}, _MISSING)")
                lines.append(f"    if v is not _MISSING and not {test}:")
            else:  # required: a subscript is cheaper than .get on the common, present path
                lines += ["    try:", f"        v = d[{key}]", "    except KeyError:"]
                lines += ["        return False", f"    if not {test}:"]
            lines.append("        return False")
        if cls is events.TurnEndReason:
            lines.append('    if (d["kind"] == "error") != ("error" in d):')
            lines.append("        return False")
        lines.append("    return True")
        return "\n".join(lines) + "\n"

    def _union_source(self, tp: Any, name: str) -> str:
        tagged: dict[str, str] = {}
        fallback = None
        for cls in typing.get_args(tp):
            attrs.resolve_types(cls, globalns=vars(events))
            (tag_type,) = [a.type for a in attrs.fields(cls) if a.name == "type"]
            if typing.get_origin(tag_type) is Literal:
                tagged[typing.get_args(tag_type)[0]] = self.function(cls)
            else:
                fallback = self.function(cls)
        lines = [
            f"def {name}(d: Any) -> bool:",
            "    if type(d) is not dict:",
            "        return False",
        ]
        lines.append('    tag = d.get("type")')
        for tag, check in tagged.items():
            lines += [f"    if tag == {json.dumps(tag)}:", f"        return {check}(d)"]
        lines.append(f"    return {fallback}(d)" if fallback else "    return False")
        return "\n".join(lines) + "\n"


_PREDICATES_HEADER = '''\
"""The fast yes/no check of each event type's ``data`` (spec/invariants.md, rule I0).

Generated by scripts/make-data-predicates.py from the attrs classes of
trio_agent/log/events.py, through the compiler in trio_agent/log/schema.py; do not edit.
tests/log/test_schema_source.py fails when this file is not what the compiler makes of the
classes now, and tests/log/test_properties.py holds each predicate to the validator that
explains a "no" (why_invalid, below).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

_MISSING: Final = object()


def why_invalid(type_: str, data: Any, path: str = "data") -> str:
    """What is wrong with ``data``, found not valid for event type ``type_``: the words of
    the validator in trio_agent.log.schema, imported on the first call (it compiles the data
    classes), so that only a bad event pays for it."""
    from .schema import explain_invalid

    return explain_invalid(type_, data, path)
'''


def predicates_source() -> str:
    """The source of :mod:`trio_agent.log.data_predicates`: one predicate per event type,
    compiled from the classes of :mod:`.events`."""
    compiler = _PredicateCompiler()
    names = {t: compiler.function(cls) for t, cls in events.DATA_CLASSES.items()}
    table = "".join(f"    {json.dumps(t)}: {n},\n" for t, n in names.items())
    return (
        _PREDICATES_HEADER
        + "".join("\n\n" + part for part in compiler.parts)
        + "\n\n#: type -> fast yes/no predicate of ``data`` for that type.\n"
        + f"DATA_PREDICATES: Final[dict[str, Callable[[Any], bool]]] = {{\n{table}}}\n"
    )


#: type -> validator of ``data`` for that type (explains what is wrong).
DATA_VALIDATORS: Final[dict[str, Validator]] = {
    name: compile_class(cls) for name, cls in events.DATA_CLASSES.items()
}


def validate_data(type_: str, data: Any, path: str = "data") -> None:
    """Raise :class:`SchemaError` unless ``data`` is valid for event type ``type_``."""
    validator = DATA_VALIDATORS.get(type_)
    if validator is None:
        raise SchemaError("type", f"unknown event type {_show(type_)}")
    validator(data, path)


def explain_invalid(type_: str, data: Any, path: str = "data") -> str:
    """What is wrong with ``data``, which its predicate found not valid for ``type_``
    (:func:`trio_agent.log.data_predicates.why_invalid` calls this)."""
    try:
        validate_data(type_, data, path)
    except SchemaError as exc:
        return str(exc)
    raise AssertionError(f"the predicate and the validator of {type_!r} disagree")
