"""What the README and the docs say that a program can check, checked against the code.

The count of conformance vectors, the ``trio-agent`` commands and ``make`` targets named,
the exit codes a command's line in the README promises, and the table of trio-agent's own
codes in spec/cli.md: each is read from the prose and compared with what the code does
(the vectors ``trio-agent conform`` loads, the parser's subcommands, the Makefile's targets,
each command's ``--help`` epilog). A number or a name that drifts fails here, not in a
reader's hands.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trio_agent.cli import errors as cli_errors, parser as cli_parser
from trio_agent.cli.conform import load_vectors
from trio_agent.cli.errors import epilog

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The prose a reader meets: the README, docs/ and the spec (notes are dated history).
DOCS = [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "spec").glob("*.md"))]


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _subcommands() -> set[str]:
    parser = cli_parser.build_parser()
    for action in parser._actions:  # argparse keeps its subparsers here
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            return set(choices)
    raise AssertionError("the parser has no subcommands")


def _codes(command: str) -> set[int]:
    """The exit codes ``trio-agent COMMAND --help`` lists."""
    return {int(m) for m in re.findall(r"^\s+(\d+)\s", epilog(command), re.MULTILINE)}


def test_the_vector_counts_are_the_vectors_conform_loads() -> None:
    count = len(load_vectors(ROOT / "spec" / "vectors", ()))
    claims = [
        (path.name, int(n))
        for path in DOCS
        for n in re.findall(r"(\d+) language-neutral cases|(?<!\w)(\d+) vectors", _text(path))
        for n in n
        if n
    ]
    assert claims, "the README no longer states the vector count"
    for name, n in claims:
        assert n == count, f"{name} says {n} vectors; spec/vectors/ holds {count}"


def test_every_command_named_exists() -> None:
    known = _subcommands()
    for path in DOCS:
        for name in re.findall(r"\btrio-agent ([a-z][a-z-]*)\b", _text(path)):
            assert name in known, f"{path.name} names `trio-agent {name}`, which does not exist"


def test_every_make_target_named_exists() -> None:
    makefile = _text(ROOT / "Makefile")
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.MULTILINE))
    for path in DOCS:
        text = _text(path)
        named = re.findall(r"`make ([a-z][\w-]*)", text)
        named += re.findall(r"^make ([a-z][\w-]*)", text, re.MULTILINE)
        for target in named:
            assert target in targets, (
                f"{path.name} names `make {target}`; the Makefile has no such target"
            )


def test_the_readme_promises_only_the_codes_a_command_lists() -> None:
    """A README line naming ``trio-agent COMMAND`` and exit codes: each code is one that
    command's ``--help`` lists."""
    checked = 0
    for line in _text(README).splitlines():
        command = re.search(r"\btrio-agent ([a-z][a-z-]*)\b", line)
        said = re.search(r"\bexits? ((?:\d+)(?:[^,;.()]*?, \d+)*)", line)
        if command is None or said is None or command.group(1) not in cli_errors.CODES:
            continue
        codes = {int(n) for n in re.findall(r"(?<![\w-])(\d+)(?![\w-])", said.group(1))}
        listed = _codes(command.group(1))
        assert codes <= listed, f"README: {line.strip()!r} promises {codes - listed}"
        checked += 1
    assert checked >= 2


def test_spec_cli_own_codes_are_the_cli_s() -> None:
    text = _text(ROOT / "spec" / "cli.md")
    section = text.split("## trio-agent's own codes", 1)[1].split("\n## ", 1)[0]
    table = {int(n) for n in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)}
    assert {cli_errors.INTERRUPTED, cli_errors.PIPE_CLOSED, cli_errors.INTERNAL} <= table
    common = _codes("demo")  # the common codes end every command's epilog
    assert {cli_errors.INTERRUPTED, cli_errors.PIPE_CLOSED} <= common
    # 3 is the refusal of the commands that may meet a live session.
    assert all(3 in _codes(c) for c in ("repair", "truncate", "run"))


def test_spec_cli_tables_are_every_code_the_commands_return() -> None:
    """The exit codes are stated once, in trio_agent/cli/errors.py (each command's --help is
    made from it); spec/cli.md's two tables hold exactly the codes some command lists, and
    the internal error's."""
    text = _text(ROOT / "spec" / "cli.md")
    contract = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    own = text.split("## trio-agent's own codes", 1)[1].split("\n## ", 1)[0]
    stated = {int(n) for n in re.findall(r"^\| (\d+) \|", contract + own, re.MULTILINE)}
    returned = set().union(*(_codes(c) for c in cli_errors.CODES)) | {cli_errors.INTERNAL}
    assert stated == returned


def _spec() -> str:
    return "\n".join(_text(p) for p in sorted((ROOT / "spec").glob("*.md")))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_named_rule_ranges_exist(path: Path) -> None:
    """A range such as ``K1–K24`` names rules that exist: its last rule is defined in spec/."""
    spec = _spec()
    for letter, last in re.findall(r"\b([IKR])\d+[–-]\1(\d+)\b", _text(path)):
        rule = f"{letter}{last}"
        assert re.search(rf"\b{rule}\b", spec), f"{path.name} names {rule}, which spec/ lacks"


def test_the_readme_s_widest_rule_ranges_are_all_the_rules() -> None:
    """The README's widest range of each family (``I0–I19``, ``K1–K24``) ends at the last
    rule spec/ defines (a rule is defined by a bold ``**K24 —`` heading)."""
    spec = _spec()
    widest: dict[str, int] = {}
    for letter, last in re.findall(r"\b([IK])\d+[–-]\1(\d+)\b", _text(README)):
        widest[letter] = max(widest.get(letter, 0), int(last))
    assert set(widest) == {"I", "K"}
    for letter, last in widest.items():
        defined = [int(n) for n in re.findall(rf"^\*\*{letter}(\d+) —", spec, re.MULTILINE)]
        assert max(defined) == last, (
            f"README says {letter}..{letter}{last}; spec/ ends at {max(defined)}"
        )


def test_the_readme_layout_names_every_room_of_the_package() -> None:
    """Each subpackage and top-level module of trio_agent/ has a row in the README's layout
    table, and each row names something that exists."""
    section = _text(README).split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(trio_agent/[\w./]+?)/?`", section))
    package = ROOT / "trio_agent"
    rooms = {
        f"trio_agent/{p.name}"
        for p in package.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))
    }
    assert rooms - named == set(), "rooms the README's layout table does not name"
    assert {n for n in named if not (ROOT / n).exists()} == set(), "rows naming nothing"
