"""What a timeline shows of a log's control characters: each one visible, one character for
one (spec/cli.md §``show --full`` and JSON output), so a log cannot drive the terminal it is
read in nor break the one line an event takes."""

from __future__ import annotations

from hypothesis import given, strategies as st
from support.terminal import is_control

from trio_agent.log.render import visible


@given(st.text())
def test_visible_leaves_no_control_and_changes_nothing_else(text: str) -> None:
    shown = visible(text)
    assert len(shown) == len(text)  # one for one: a cut made before is the same cut after
    assert not any(map(is_control, shown))
    assert [a for a in text if not is_control(a)] == [
        b for a, b in zip(text, shown, strict=True) if not is_control(a)
    ]
    assert visible(shown) == shown


def test_each_control_is_shown_as_its_picture() -> None:
    assert visible("a\nb") == "a⏎b"
    assert visible("\x1b[31mred\x1b[0m") == "␛[31mred␛[0m"
    assert visible("\x1b]0;title\x07") == "␛]0;title␇"
    assert visible("50%\r100%\t\x00\x08") == "50%␍100%␉␀␈"
    assert visible("\x7f") == "␡"
    assert visible("\x9b2J\x85") == "�2J�"  # CSI and NEL: no picture exists
    assert visible("no-break\u00a0space, é, ⏎, \u2028") == "no-break\u00a0space, é, ⏎, \u2028"
