"""What a terminal acts on instead of showing: the oracle for "a log's control characters are
shown, never sent" (spec/cli.md §``show --full`` and JSON output)."""

from __future__ import annotations


def is_control(ch: str) -> bool:
    """Below U+0020, DEL, or U+0080-U+009F: what a terminal may act on instead of showing."""
    return ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0


def sent_to_terminal(text: str) -> list[str]:
    """The control characters of ``text`` but its newlines (which end its lines)."""
    return [ch for ch in text if ch != "\n" and is_control(ch)]
