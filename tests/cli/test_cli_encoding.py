"""stdout in an encoding that cannot write every character (spec/cli.md §Output encoding):
an ASCII or Latin-1 locale, or ``PYTHONIOENCODING``. A character it cannot encode is written
as a JSON escape; the commands once stopped with "internal error: UnicodeEncodeError", exit
70. Each command runs as a process, its output read as bytes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.cli import CLI
from support.polling import HANG_GUARD
from support.procenv import REPO, child_env

from trio_agent.cli.streams import ESCAPES

#: A text with a character of Latin-1 (é), one of the Basic Multilingual Plane beyond it (…)
#: and one above U+FFFF (a surrogate pair in JSON).
TEXT = "café… 😀"


def test_the_escape_is_a_json_string_escape() -> None:
    written = TEXT.encode("ascii", ESCAPES)
    assert written == b"caf\\u00e9\\u2026 \\ud83d\\ude00"
    assert json.loads(b'"' + written + b'"') == TEXT
    assert TEXT.encode("latin-1", ESCAPES) == "café\\u2026 \\ud83d\\ude00".encode("latin-1")


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-turn vector's log, its texts replaced by :data:`TEXT`, in a file named with it
    (the name is in ``check``'s output)."""
    vector = json.loads((REPO / "spec/vectors/valid/one-turn-completed.json").read_text())
    path = tmp_path_factory.mktemp("enc") / f"{TEXT}.jsonl"
    lines = [line.replace("please handle m1", TEXT) for line in vector["log"]]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def run(encoding: str | None, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = child_env() if encoding is None else child_env(PYTHONIOENCODING=encoding)
    return subprocess.run(
        [*CLI, *args], capture_output=True, stdin=subprocess.DEVNULL, env=env, timeout=HANG_GUARD
    )


COMMANDS = [["show"], ["show", "--json"], ["show", "--full"], ["check", "--json"], ["fold"]]


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_output_is_the_same_with_escapes(log: Path, encoding: str, command: list[str]) -> None:
    """The same exit and stderr as in UTF-8, and the same stdout but for the escapes."""
    utf8 = run("utf-8", *command, str(log))
    narrow = run(encoding, *command, str(log))
    assert narrow.returncode == utf8.returncode, narrow.stderr.decode(errors="replace")
    assert b"internal error" not in narrow.stderr
    assert max(utf8.stdout) > 127 or command == ["fold"]  # beyond ASCII (fold: numbers only)
    text = utf8.stdout.decode("utf-8")
    assert narrow.stdout == text.encode(encoding, ESCAPES)
    if "--json" in command:
        records = [json.loads(line) for line in utf8.stdout.splitlines()]
        assert [json.loads(line.decode(encoding)) for line in narrow.stdout.splitlines()] == records


def test_the_demo_runs_on_an_ascii_stdout() -> None:
    """The demo's box drawing comes out as escapes: ugly, but the walkthrough runs."""
    done = run("ascii", "demo", "esc")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"internal error" not in done.stderr
    assert b"\\u2500" in done.stdout  # a box-drawing line, escaped
    done.stdout.decode("ascii")  # nothing else got through
