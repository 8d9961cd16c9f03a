"""Every reference in the repository leads somewhere inside it (the repository is
self-contained: a porter can follow every citation).

- every ``spec/<file>.md`` path named in code, tests, docs, notes or the spec exists;
- every section cited as ``spec/<file>.md §N`` (or ``§N.M``) is a heading of that file;
- every section cited by name (``spec/log.md §Header``, ``recovery.md §Truncate: the
  rejected alternative``) starts with the whole name of one of that file's headings (case
  aside; numbering, backticks, a leading "The" and a `` — {shape}`` suffix are not part of
  a heading's name);
- every rule id cited (``K14``, ``R5``, ``C5``, ``I3``) is defined in spec/ (as ``**K14 —``);
- nothing cites a document or a tracker outside the repository: a design brief by name or
  section, a reference digest, a tracker's issue or item numbers (the patterns: ``OUTSIDE``).

The checks are functions over text, so ``test_the_checks_can_fail`` shows each one failing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("trio_agent", "tests", "docs", "bench", "spec", "notes", "scripts")
SUFFIXES = {".py", ".md", ".json", ".txt", ".sh", ".toml"}

SPEC_PATH = re.compile(r"spec/[A-Za-z0-9_./-]+?\.md\b")
SECTION_CITE = re.compile(r"(spec/[a-z-]+\.md),? §(\d+(?:\.\d+)?)")
HEADING = re.compile(r"^#+ (?:§)?(\d+(?:\.\d+)?)\.? ", re.MULTILINE)
# A named citation runs on to the next line when a comment or paragraph wraps it.
NAMED_CITE = re.compile(r"(?<![\w/.-])(?:spec/)?([a-z-]+\.md),? §(?!\d)(\S[^\n]*(?:\n[^\n]*)?)")
ANY_HEADING = re.compile(r"^#+ (.+)$", re.MULTILINE)
WRAP = re.compile(r"\s*\n\s*(?:#:?|//|\*|>)?\s*")
RULE_DEF = re.compile(r"\*\*([KRCI]\d+)\b")
RULE_CITE = re.compile(r"(?<![\w./-])([KRCI]\d+)\b(?![\w.-])")
OUTSIDE = re.compile(
    r"DESIGN(?:\.md| §)|dsh-semantics|§12\.\d|digest §|\bissue \d+|\bitem \d+", re.IGNORECASE
)


def _plain(text: str) -> str:
    return " ".join(WRAP.sub(" ", text).replace("`", "").split()).lower()


def heading_names(spec_text: str) -> set[str]:
    """The names a section of ``spec_text`` may be cited by (lower case)."""
    names = set()
    for heading in ANY_HEADING.findall(spec_text):
        name = re.sub(r"^§?\d+(?:\.\d+)*\.?\s+", "", _plain(heading).split(" — ")[0])
        names |= {name, name.removeprefix("the ")}
    return names


def defined_rules(spec_texts: Iterable[str]) -> set[str]:
    return {m for text in spec_texts for m in RULE_DEF.findall(text)}


def broken(
    text: str,
    *,
    rules: set[str],
    exists: set[str],
    sections: dict[str, set[str]],
    names: dict[str, set[str]],
) -> list[str]:
    """The references of ``text`` that lead nowhere (empty when all are fine)."""
    out = [f"missing {p}" for p in SPEC_PATH.findall(text) if p not in exists]
    out += [
        f"no section §{n} in {p}"
        for p, n in SECTION_CITE.findall(text)
        if p in exists and n not in sections.get(p, set())
    ]
    for file, rest in NAMED_CITE.findall(text):
        cited, where = _plain(rest), names.get(f"spec/{file}")
        if where is not None and not any(cited.startswith(name) for name in where):
            out.append(f"no section named {rest.splitlines()[0][:40]!r} in spec/{file}")
    out += [f"undefined rule {r}" for r in RULE_CITE.findall(text) if r not in rules]
    out += [f"outside citation {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    return out


def scanned_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in SCANNED:
        files += [
            p
            for p in (ROOT / top).rglob("*")
            if p.suffix in SUFFIXES and p.is_file() and "golden" not in p.parts
        ]
    return [p for p in files if p != Path(__file__).resolve()]


def spec_state() -> dict[str, object]:
    """``broken``'s keyword arguments for the spec/ of this checkout."""
    texts = {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for p in sorted((ROOT / "spec").glob("*.md"))
    }
    return {
        "rules": defined_rules(texts.values()),
        "exists": set(texts),
        "sections": {p: set(HEADING.findall(t)) for p, t in texts.items()},
        "names": {p: heading_names(t) for p, t in texts.items()},
    }


def test_every_reference_leads_inside_the_repository() -> None:
    state = spec_state()
    assert {"K1", "R1", "C1", "I1"} <= state["rules"], "the rule definitions are no longer found"  # type: ignore[operator]
    problems = [
        f"{path.relative_to(ROOT)}: {problem}"
        for path in scanned_files()
        for problem in broken(path.read_text(encoding="utf-8", errors="replace"), **state)
    ]  # fmt: skip
    assert problems == []


def test_the_checks_can_fail() -> None:
    state = spec_state()
    good = "spec/cancel.md K14; spec/recovery.md R5; C5 of spec/consumed-work.md; "
    good += "spec/tools.md §10, spec/persistence.md §10.3; spec/log.md §Header; "
    good += "recovery.md §Truncate: the\n    # rejected alternative; spec/log.md §`tool/result`"
    assert broken(good, **state) == []
    assert broken("see spec/nowhere.md", **state) == ["missing spec/nowhere.md"]
    assert broken("spec/tools.md §99", **state) == ["no section §99 in spec/tools.md"]
    assert broken("pins K99", **state) == ["undefined rule K99"]
    assert broken("spec/log.md §Inbox)", **state) == ["no section named 'Inbox)' in spec/log.md"]
    assert broken("(recovery.md §Truncate)", **state) == [
        "no section named 'Truncate)' in spec/recovery.md"
    ]
    # Synthetic bad input, assembled here so this file itself cites nothing outside.
    outside_samples = (
        "DESIGN" + " §12.2",
        "as in " + "issue 2",
        "item" + " 8 of it",
        "dsh" + "-semantics.md",
    )
    for bad in outside_samples:
        assert broken(bad, **state) == [
            f"outside citation {OUTSIDE.search(bad).group(0)!r}"  # type: ignore[union-attr]
        ], bad
