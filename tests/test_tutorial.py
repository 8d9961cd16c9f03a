"""docs/tutorial.md says what its programs print, and quotes code that exists.

Each ``<!-- output: NAME -->`` block is compared with what ``docs/tutorial/NAME`` prints when
run here (only the clock and the pids are masked); each block headed ``# docs/tutorial/X.py``
has its lines in that file, in order; each block after ``<!-- source: PATH -->`` is a verbatim
run of lines of ``PATH``, so a quote from the runtime cannot rot unnoticed; the walked log's
lines are JSON events in ``seq`` order.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.procenv import child_env

from trio_agent.log.repair import REAPED_TEXTS

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
TEXT = TUTORIAL.read_text(encoding="utf-8")

_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
_MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ"), "DATE"),
    (re.compile(r"pgid \d+"), "pgid N"),
    # Where the kernel gives no PID namespace, a call runs in a process group (spec/tools.md
    # §10); the tutorial shows a machine that has one.
    (re.compile(r"\((?:pid-namespace|process-group)\)"), "(CONTAINMENT)"),
    # What recovery found of the killed worker's tool (R5, spec/recovery.md): the kernel ended
    # its namespace with the worker, or recovery found it still there and ended it, by timing
    # (or, with no namespace, stopped its group).
    (re.compile("|".join(re.escape(REAPED_TEXTS[k].strip()) for k in REAPED_TEXTS)), "R5"),
]


def _blocks_after(marker: str) -> list[tuple[str, str]]:
    """(argument, block body) for each ``<!-- marker: argument -->`` followed by a block."""
    found = []
    for m in re.finditer(rf"<!-- {marker}: (\S+) -->\n```\w*\n(.*?)```", TEXT, re.S):
        found.append((m.group(1), m.group(2)))
    return found


def _mask(text: str) -> str:
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


OUTPUTS = _blocks_after("output")


def test_the_tutorial_has_its_four_programs_and_quotes() -> None:
    assert [name for name, _ in OUTPUTS] == [
        "one_turn.py",
        "esc.py",
        "kill_and_reopen.py",
        "truncate_or_complete.py",
    ]
    assert len(_blocks_after("source")) >= 4


@pytest.mark.parametrize(("name", "shown"), OUTPUTS, ids=[n for n, _ in OUTPUTS])
def test_a_program_prints_what_the_tutorial_shows(name: str, shown: str, tmp_path: Path) -> None:
    env = child_env(TMPDIR=str(tmp_path))  # each program's mkdtemp (its store) lands here
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "tutorial" / name)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _mask(done.stdout) == _mask(shown)
    assert list(tmp_path.glob("tmp*/*/session.jsonl")), "the program's store is not in tmp_path"


def test_a_program_block_is_the_programs_own_lines() -> None:
    checked = 0
    for lang, body in _BLOCK.findall(TEXT):
        first, _, rest = body.partition("\n")
        m = re.match(r"# (docs/tutorial/\S+\.py)", first)
        if lang != "python" or m is None:
            continue
        source = [
            re.sub(r"\s+# fmt: skip$", "", line)
            for line in (ROOT / m.group(1)).read_text(encoding="utf-8").splitlines()
        ]
        at = 0
        for line in rest.splitlines():
            if not line.strip():
                continue
            assert line in source[at:], f"{m.group(1)}: not in the program (in order): {line!r}"
            at = source.index(line, at) + 1
        checked += 1
    assert checked == 4


@pytest.mark.parametrize("path, quote", _blocks_after("source"))
def test_a_quote_from_the_runtime_is_verbatim(path: str, quote: str) -> None:
    source = (ROOT / path).read_text(encoding="utf-8")
    assert quote in source, f"{path} no longer has the lines the tutorial quotes:\n{quote}"


def test_the_walked_log_is_events_in_seq_order() -> None:
    (body,) = [b for lang, b in _BLOCK.findall(TEXT) if lang == "jsonl"]
    header, *events = [json.loads(line) for line in body.splitlines()]
    assert header["type"] == "session"
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert events[-1]["type"] == "turn/end"
    assert events[-1]["data"]["reason"] == {"kind": "interrupted"}


def test_the_quote_check_can_fail() -> None:
    """A quote that the source does not have is caught (the check is not vacuous)."""
    with pytest.raises(AssertionError):
        test_a_quote_from_the_runtime_is_verbatim(
            "trio_agent/runtime/turn.py", "            with controller.scope_that_never_was:\n"
        )
