"""trio_agent.failures: the one place that looks inside exception groups."""

from __future__ import annotations

from trio_agent.failures import exception_text, innermost, leaves


def test_leaves_are_every_exception_inside_nested_groups_in_order() -> None:
    a, b, c = ValueError("a"), KeyError("b"), BrokenPipeError()
    group = BaseExceptionGroup("outer", [ExceptionGroup("inner", [a, b]), c])
    assert leaves(group) == [a, b, c]
    assert leaves(a) == [a]


def test_innermost_unwraps_only_groups_of_one() -> None:
    a = ValueError("a")
    assert innermost(ExceptionGroup("x", [ExceptionGroup("y", [a])])) is a
    several = ExceptionGroup("x", [a, KeyError("b")])
    assert innermost(several) is several


def test_exception_text_is_type_and_message_or_the_type_alone() -> None:
    assert exception_text(ValueError("boom")) == "ValueError: boom"
    assert exception_text(BrokenPipeError()) == "BrokenPipeError"
