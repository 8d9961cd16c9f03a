"""notes/ is findable: every note says whether it is current, and the index agrees.

notes/README.md indexes topic -> current note -> spec section -> earlier notes. Each note
opens with ``Status: current.`` or ``Status: superseded by [note](file.md) ...``; this test
holds the notes and the index to each other, so a new note cannot be left out of the index,
and a superseded one cannot still claim to be current.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTES = Path(__file__).resolve().parent.parent / "notes"
_LINK = re.compile(r"\[[\w.-]+\]\(([\w.-]+\.md)\)")


def index(notes: Path) -> tuple[set[str], dict[str, str]]:
    """(current notes, superseded note -> the current note of its row) from the index."""
    current: set[str] = set()
    superseded: dict[str, str] = {}
    for line in (notes / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) < 4:
            continue
        now = _LINK.findall(cells[1])
        current.update(now)
        for earlier in _LINK.findall(cells[3]):
            superseded[earlier] = now[0] if now else ""
    return current, superseded


def problems(notes: Path) -> list[str]:
    current, superseded = index(notes)
    found = []
    for path in sorted(notes.glob("2*.md")):
        text = path.read_text(encoding="utf-8")
        status = re.search(r"^Status: (.*)$", text, re.MULTILINE)
        name = path.name
        if status is None:
            found.append(f"{name}: no Status line")
            continue
        if name in current:
            if not status.group(1).startswith("current"):
                found.append(f"{name}: the index calls it current, it says {status.group(1)!r}")
        elif name in superseded:
            by = f"superseded by [{superseded[name][:-3]}]({superseded[name]})"
            if not status.group(1).startswith(by):
                found.append(f"{name}: the index says {by}, the note says {status.group(1)!r}")
        else:
            found.append(f"{name}: not in notes/README.md")
    for named in current | set(superseded):
        if not (notes / named).exists():
            found.append(f"notes/README.md names {named}, which does not exist")
    return found


def test_every_note_has_a_status_the_index_agrees_with() -> None:
    assert problems(NOTES) == []


@pytest.mark.parametrize(
    ("note", "said"),
    [
        ("2026-01-02-new.md", "not in notes/README.md"),
        ("2026-01-01-old.md", "the index says superseded by"),
    ],
)
def test_the_check_fails_on_an_unindexed_or_misstated_note(
    tmp_path: Path, note: str, said: str
) -> None:
    (tmp_path / "README.md").write_text(
        "| topic | current note | spec | earlier notes |\n|---|---|---|---|\n"
        "| t | [2026-01-03-now](2026-01-03-now.md) | — | [2026-01-01-old](2026-01-01-old.md) |\n",
        encoding="utf-8",
    )
    (tmp_path / "2026-01-03-now.md").write_text("# now\n\nStatus: current.\n", encoding="utf-8")
    (tmp_path / "2026-01-01-old.md").write_text("# old\n\nStatus: current.\n", encoding="utf-8")
    (tmp_path / "2026-01-02-new.md").write_text("# new\n\nStatus: current.\n", encoding="utf-8")
    found = problems(tmp_path)
    assert any(p.startswith(note) and said in p for p in found), found
