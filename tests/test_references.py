"""Every reference in the repository leads somewhere inside it (the repository is
self-contained: a porter can follow every citation).

- every ``spec/<file>.md`` path named in code, tests, docs, notes or the spec exists;
- every section cited as ``spec/<file>.md §N`` (or ``§N.M``, or ``§N of spec/<file>.md``) is
  a heading of that file;
- every section cited by name (``spec/log.md §Header``, ``recovery.md §Truncate: the
  rejected alternative``) starts with the whole name of one of that file's headings (case
  aside; numbering, backticks, a leading "The" and a `` — {shape}`` suffix are not part of
  a heading's name);
- a citation is read whatever wraps it: a line break (with a comment's ``#`` or a
  docstring's indent) between the file and the ``§``, a Markdown link
  (``[spec/log.md](../spec/log.md) §Header``), HTML ``<code>`` in the demo page;
- inside spec/, a ``§`` that names no file cites a section of the file it stands in
  (``(§Live sessions)`` in spec/cli.md); elsewhere a bare section number (``stopped by §4``)
  is refused: the reader cannot tell which file it means;
- every rule id cited (``K14``, ``R5``, ``C5``, ``I3``) is defined in spec/ (as ``**K14 —``);
- nothing cites a document or a tracker outside the repository: a design brief by name or
  section, a reference digest, a tracker's issue or item numbers (the patterns: ``OUTSIDE``).

The checks are functions over text, so ``test_the_checks_can_fail`` shows each one failing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("trio_agent", "tests", "docs", "bench", "spec", "notes", "scripts")
#: Not scanned: what ``python -m bench`` writes (git-ignored; its JSON holds test ids, not prose).
UNSCANNED = ("bench/out",)
SUFFIXES = {".py", ".md", ".json", ".txt", ".sh", ".toml", ".html"}

SPEC_PATH = re.compile(r"spec/[A-Za-z0-9_./-]+?\.md\b")
# Between a file and its ``§``: a comma, and spaces or a line break (a comment's ``#``, a
# docstring's indent, a Markdown quote or list continuing the line).
SEP = r",?(?:[ \t]+|[ \t]*\n[ \t]*(?:#:?|//|\*|>)?[ \t]*)"
# A file, then one section number or a list of them (``§3, §4``, ``§2–§8``, ``§4 and §5``).
FILE = r"(?<![\w/.-])(?:spec/)?([A-Za-z-]+\.md)"
NUMBER = r"\d+(?:\.\d+)?"
SECTION_CITE = re.compile(rf"{FILE}{SEP}§({NUMBER}(?:(?:, | and |–|-)§{NUMBER})*)")
SECTION_OF = re.compile(rf"§({NUMBER}) of {FILE}")
LISTED = re.compile(rf"§({NUMBER})")
HEADING = re.compile(r"^#+ (?:§)?(\d+(?:\.\d+)?)\.? ", re.MULTILINE)
# A named citation runs on to the next line when a comment or paragraph wraps it.
NAMED_CITE = re.compile(rf"{FILE}{SEP}§(?!\d)(\S[^\n]*(?:\n[^\n]*)?)")
# What the citations above leave over: a ``§`` naming no file (RFC sections are not ours).
BARE = re.compile(r"(?<!RFC \d{4} )§(\d+(?:\.\d+)?|\S[^\n]*(?:\n[^\n]*)?)")
MD_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\s]+\)")
HTML_CODE = re.compile(r"</?code>")
ANY_HEADING = re.compile(r"^#+ (.+)$", re.MULTILINE)
WRAP = re.compile(r"\s*\n\s*(?:#:?|//|\*|>)?\s*")
RULE_DEF = re.compile(r"\*\*([KRCI]\d+)\b")
RULE_CITE = re.compile(r"(?<![\w./-])([KRCI]\d+)\b(?![\w.-])")
OUTSIDE = re.compile(
    # docs/design.md is ours: a path or a link before it (``docs/design.md``, ``(design.md)``).
    r"(?<![/(])DESIGN\.md|DESIGN §|dsh-semantics|§12\.\d|digest §|\bissue \d+|\bitem \d+"
    r"|\bthe (?:design )?brief\b|\bthe issue\b|\breference \d",
    re.IGNORECASE,
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


def _names_a_heading(rest: str, names: set[str]) -> bool:
    cited = _plain(rest)
    return any(cited.startswith(name) for name in names)


def broken(
    text: str,
    *,
    rules: set[str],
    exists: set[str],
    sections: dict[str, set[str]],
    names: dict[str, set[str]],
    own: str | None = None,
) -> list[str]:
    """The references of ``text`` that lead nowhere (empty when all are fine). ``own`` is
    the spec file ``text`` is, if it is one (its bare ``§`` citations are its own)."""
    out = [f"missing {p}" for p in SPEC_PATH.findall(text) if p not in exists]
    # The link's label is what the reader sees; its target is checked just above.
    text = HTML_CODE.sub("`", MD_LINK.sub(r"\1", text))
    cited_at: set[int] = set()
    numbered = [
        (f"spec/{m.group(1)}", n.group(1), m.start(2) - 1 + n.start())
        for m in SECTION_CITE.finditer(text)
        for n in LISTED.finditer("§" + m.group(2))
    ]
    numbered += [(f"spec/{m.group(2)}", m.group(1), m.start()) for m in SECTION_OF.finditer(text)]
    for p, n, at in numbered:
        cited_at.add(at)
        if p in exists and n not in sections.get(p, set()):
            out.append(f"no section §{n} in {p}")
    for m in NAMED_CITE.finditer(text):
        file, rest = m.groups()
        cited_at.add(m.start(2) - 1)
        where = names.get(f"spec/{file}")
        if where is not None and not _names_a_heading(rest, where):
            out.append(f"no section named {rest.splitlines()[0][:40]!r} in spec/{file}")
    for m in BARE.finditer(text):
        if m.start() in cited_at:
            continue
        rest = m.group(1)
        if own is None:
            if rest[0].isdigit():
                out.append(f"section §{rest} of which file?")
        elif rest[0].isdigit():
            if rest not in sections.get(own, set()):
                out.append(f"no section §{rest} in {own}")
        elif not _names_a_heading(rest, names.get(own, set())):
            out.append(f"no section named {rest.splitlines()[0][:40]!r} in {own}")
    out += [f"undefined rule {r}" for r in RULE_CITE.findall(text) if r not in rules]
    out += [f"outside citation {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    return out


def scanned_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in SCANNED:
        files += [
            p
            for p in (ROOT / top).rglob("*")
            if p.suffix in SUFFIXES
            and p.is_file()
            and "golden" not in p.parts
            and not any(p.is_relative_to(ROOT / out) for out in UNSCANNED)
        ]
    return [p for p in files if p != Path(__file__).resolve()]


class SpecState(TypedDict):
    """``broken``'s keyword arguments: what the spec/ of a checkout defines."""

    rules: set[str]
    exists: set[str]
    sections: dict[str, set[str]]
    names: dict[str, set[str]]


def spec_state() -> SpecState:
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
    assert {"K1", "R1", "C1", "I1"} <= state["rules"], "the rule definitions are no longer found"
    problems = []
    for path in scanned_files():
        name = str(path.relative_to(ROOT))
        own = name if name in state["exists"] else None
        text = path.read_text(encoding="utf-8", errors="replace")
        problems += [f"{name}: {problem}" for problem in broken(text, own=own, **state)]
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
    # Wrapped, listed, linked, reversed, in HTML: the same checks reach them.
    wrapped = '"""(spec/persistence.md\n    §2.4)"""'
    assert broken(wrapped, **state) == ["no section §2.4 in spec/persistence.md"]
    assert broken("# spec/tools.md\n# §4, §99", **state) == ["no section §99 in spec/tools.md"]
    assert broken("spec/tools.md §2–§8, §11 and §12", **state) == [
        "no section §12 in spec/tools.md"
    ]
    assert broken("[spec/log.md](../spec/log.md) §Inbox", **state) == [
        "no section named 'Inbox' in spec/log.md"
    ]
    assert broken("spec/log.md §<code>tool/call</code>, I15", **state) == []
    assert broken("spec/log.md §<code>tool/cal</code>", **state) == [
        "no section named '`tool/cal`' in spec/log.md"
    ]
    assert broken("§11 of spec/persistence.md", **state) == [
        "no section §11 in spec/persistence.md"
    ]
    assert broken("spec/README.md §File formats", **state) == []
    assert broken("spec/README.md §Layout", **state) == [
        "no section named 'Layout' in spec/README.md"
    ]
    # A bare section: its own file's inside spec/, refused elsewhere (which file?).
    assert broken("stopped by §4", **state) == ["section §4 of which file?"]
    assert broken("(§Observers)", own="spec/persistence.md", **state) == []
    assert broken("(§2.4)", own="spec/persistence.md", **state) == [
        "no section §2.4 in spec/persistence.md"
    ]
    assert broken("(§Observing)", own="spec/persistence.md", **state) == [
        "no section named 'Observing)' in spec/persistence.md"
    ]
    assert broken("see RFC 9110 §9.3.2", **state) == []
    # Synthetic bad input, assembled here so this file itself cites nothing outside.
    assert broken("DESIGN" + " §12.2", **state) == [
        "section §12.2 of which file?",
        "outside citation " + repr("DESIGN" + " §"),
    ]
    outside_samples = (
        "DESIGN" + ".md",
        "as in " + "issue 2",
        "item" + " 8 of it",
        "dsh" + "-semantics.md",
        "everything the " + "brief promises",
        "the " + "issue's bar",
        "Reference" + " 6.4",
    )
    # Our own docs/design.md, named by its path or linked, is not the outside document.
    assert broken("[docs/" + "design.md](docs/" + "design.md)", **state) == []
    for bad in outside_samples:
        assert broken(bad, **state) == [
            f"outside citation {OUTSIDE.search(bad).group(0)!r}"  # type: ignore[union-attr]
        ], bad
