"""The strict converters every process boundary builds on (``trio_agent.boundary``): no value
is coerced, and a refusal names the field and why."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any, Literal

import attrs
import cattrs
import pytest

from trio_agent import boundary
from trio_agent.boundary import errors, first_error, strict_converter


@attrs.frozen
class Item:
    text: str
    count: int


@attrs.frozen
class Message:
    kind: Literal["a", "b"]
    ok: bool
    dwell: float
    items: list[Item]
    note: str | None = None


GOOD: dict[str, Any] = {
    "kind": "a",
    "ok": True,
    "dwell": 1,
    "items": [{"text": "x", "count": 2}],
}


def refusal(value: Any, cls: type = Message, **options: bool) -> list[tuple[str, str]]:
    with pytest.raises(cattrs.BaseValidationError) as info:
        strict_converter(**options).structure(value, cls)
    return errors(info.value)


def test_a_well_formed_message_is_structured() -> None:
    message = strict_converter().structure(GOOD, Message)
    assert message == Message("a", True, 1.0, [Item("x", 2)])
    assert type(message.dwell) is float
    assert strict_converter().unstructure(message) == {**GOOD, "dwell": 1.0, "note": None}


@pytest.mark.parametrize(
    ("change", "path", "why"),
    [
        ({"items": [{"text": "x", "count": "2"}]}, "$.items[0].count",
         "expected an integer, got str '2'"),
        ({"items": [{"text": "x", "count": True}]}, "$.items[0].count",
         "expected an integer, got bool True"),
        ({"ok": 0}, "$.ok", "expected a boolean, got int 0"),
        ({"note": []}, "$.note", "expected a string, got list []"),
        ({"items": [{"text": 7, "count": 2}]}, "$.items[0].text", "expected a string, got int 7"),
        ({"dwell": "1.5"}, "$.dwell", "expected a number, got str '1.5'"),
        ({"dwell": True}, "$.dwell", "expected a number, got bool True"),
        ({"items": "abc"}, "$.items", "expected an array, got str 'abc'"),
        ({"items": {}}, "$.items", "expected an array, got dict {}"),
        ({"items": [7]}, "$.items[0]", "expected an object, got int 7"),
        ({"kind": "c"}, "$.kind", "must be one of 'a', 'b'"),
    ],
)  # fmt: skip
def test_each_strict_hook_refuses_a_coercion_naming_the_field(
    change: dict[str, Any], path: str, why: str
) -> None:
    assert refusal({**GOOD, **change}) == [(path, why)]


def test_floats_accept_inf_unless_finite_is_asked_for() -> None:
    inf = {**GOOD, "dwell": float("inf")}
    assert strict_converter().structure(inf, Message).dwell == float("inf")
    assert refusal(inf, finite_floats=True) == [
        ("$.dwell", "expected a finite number, got float inf")
    ]
    nan = {**GOOD, "dwell": float("nan")}
    assert refusal(nan, finite_floats=True)[0][1] == "expected a finite number, got float nan"


def test_a_missing_field_and_an_extra_key_are_named() -> None:
    value = {k: v for k, v in GOOD.items() if k != "ok"} | {"okay": True, "extra": 1}
    assert refusal(value) == [("$.ok", "is missing"), ("$", "unknown field(s): extra, okay")]
    lenient = strict_converter(forbid_extra_keys=False)
    assert lenient.structure({**GOOD, "extra": 1}, Message) == lenient.structure(GOOD, Message)


def test_every_leaf_is_reported_in_order_under_the_root_given() -> None:
    value = {**GOOD, "ok": 1, "items": [{"text": "x", "count": 1}, {"count": "1"}]}
    with pytest.raises(cattrs.BaseValidationError) as info:
        strict_converter().structure(value, Message)
    assert errors(info.value, root="event") == [
        ("event.ok", "expected a boolean, got int 1"),
        ("event.items[1].text", "is missing"),
        ("event.items[1].count", "expected an integer, got str '1'"),
    ]


def test_the_first_error_is_a_dotted_path_relative_to_the_value() -> None:
    def first(value: Any) -> tuple[str | None, str]:
        with pytest.raises(cattrs.BaseValidationError) as info:
            strict_converter().structure(value, Message)
        return first_error(info.value)

    assert first({**GOOD, "items": [{"text": "x"}]}) == ("items[0].count", "is missing")
    assert first({**GOOD, "kind": "c"}) == ("kind", "must be one of 'a', 'b'")
    # The value itself: the path is None and what is wrong names the key.
    assert first({**GOOD, "extra": 1}) == (None, "unknown field(s): extra")


@attrs.frozen
class Holder:
    item: Item
    data: dict[str, Any]
    points: list[Literal["a", "b"]]


HELD: dict[str, Any] = {"item": {"text": "x", "count": 1}, "data": {}, "points": ["a"]}


@pytest.mark.parametrize(
    ("change", "path", "why"),
    [
        ({"item": "x"}, "$.item", "expected an object, got str 'x'"),
        ({"item": None}, "$.item", "expected an object, got NoneType None"),
        ({"data": [1]}, "$.data", "expected an object, got list [1]"),
        ({"points": "a"}, "$.points", "expected an array, got str 'a'"),
        ({"points": ["c"]}, "$.points[0]", "must be one of 'a', 'b'"),
    ],
)  # fmt: skip
def test_a_class_or_a_dict_takes_an_object_and_says_so(
    change: dict[str, Any], path: str, why: str
) -> None:
    """Not the words of the ``AttributeError`` reading a non-object would raise, and a list of
    choices refused as a list is not said to be one choice."""
    assert refusal({**HELD, **change}, Holder) == [(path, why)]


def test_the_value_itself_must_be_an_object() -> None:
    value: object
    for value in ([], "x", None):
        with pytest.raises(TypeError) as info:
            strict_converter().structure(value, Message)
        assert str(info.value).startswith("expected an object, got ")


def test_an_optional_literal_names_its_choices() -> None:
    @attrs.frozen
    class Ended:
        cause: Literal["user", "parent"] | None

    assert refusal({"cause": "esc"}, Ended) == [("$.cause", "must be one of 'user', 'parent'")]


def test_the_module_imports_only_attrs_cattrs_and_the_standard_library() -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(Path(boundary.__file__).read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import: a bottom module imports no layer"
            imported.add((node.module or "").split(".")[0])
    assert imported - set(sys.stdlib_module_names) - {"__future__"} <= {"attrs", "cattrs"}
