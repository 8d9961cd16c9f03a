"""Session id escaping: injective, one safe path component, bounded length."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from trio_agent.store import escape_id
from trio_agent.store.ids import MAX_PLAIN, unescape_id

#: Every id a store takes (spec/persistence.md §1): no lone surrogate, no NUL.
ids = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\0"), min_size=1, max_size=400
)


def _safe(name: str) -> None:
    assert name not in (".", "..")
    assert "/" not in name and "\\" not in name and "\0" not in name
    assert "." not in name
    assert 0 < len(name.encode()) <= 255


@given(ids)
def test_escaped_name_is_one_safe_component(session_id: str) -> None:
    _safe(escape_id(session_id))


@given(ids, ids)
def test_escape_is_injective(a: str, b: str) -> None:
    if a != b:
        assert escape_id(a) != escape_id(b)


@given(ids, ids)
def test_escape_is_injective_under_case_folding(a: str, b: str) -> None:
    if a != b:
        assert escape_id(a).lower() != escape_id(b).lower()


@given(st.lists(ids, min_size=2, max_size=20, unique=True))
def test_no_collisions_in_a_batch(batch: list[str]) -> None:
    assert len({escape_id(i) for i in batch}) == len(batch)


@pytest.mark.parametrize(
    "session_id",
    ["../x", "..", ".", "/", "/etc/passwd", "a/../../b", "x" * 4096, "é" * 300, "A", "a"],
)
def test_nasty_ids(session_id: str) -> None:
    _safe(escape_id(session_id))


def test_examples() -> None:
    assert escape_id("s1") == "s1"
    assert escape_id("my_session-2") == "my_session-2"
    assert escape_id("A") == "%41"
    assert escape_id("..") == "%2E%2E"
    assert escape_id("a/b") == "a%2Fb"
    long = escape_id("x" * 1000)
    assert "~" in long and len(long) <= MAX_PLAIN + 70
    assert escape_id("x" * 1000) != escape_id("x" * 1001)


def test_empty_id_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        escape_id("")


def test_a_nul_is_refused_before_any_name_is_made() -> None:
    with pytest.raises(ValueError, match="NUL"):
        escape_id("a\0b")


@given(ids)
def test_unescape_gives_back_every_id_kept_whole(session_id: str) -> None:
    name = escape_id(session_id)
    assert unescape_id(name) == (None if "~" in name else session_id)


@given(st.text(max_size=30))
def test_unescape_takes_only_the_names_escape_gives(name: str) -> None:
    session_id = unescape_id(name)
    assert session_id is None or escape_id(session_id) == name


@pytest.mark.parametrize(
    "name",
    ["", "A", "a.b", "%2e", "%2", "%G0", "%FF", "%00", "%C3", "x~" + "0" * 64, "é"],
)
def test_unescape_refuses_what_no_id_escapes_to(name: str) -> None:
    """Upper-case or punctuation kept, lower-case hex, a cut escape, bytes that are not
    UTF-8, a NUL, a hashed (cut) name."""
    assert unescape_id(name) is None
