"""``show``'s timeline in one pass against its two passes, byte for byte.

The timeline is rendered while the scan reads the file, spilled (in memory, then in a
temporary file) until the count its first line shows is known, and copied out after it.
When the spill cannot be written, ``show`` takes the two passes with the readable renderer
instead. These tests make the temporary directory unusable for real (a regular file in its
place) to get the two-pass output, and hold the one-pass output, spilled in memory and
spilled to a file, to it: stdout, stderr and the exit code, on every vector file (valid,
broken, torn, unreadable) and on generated logs, plain and with ``--color --full``; and in
a subprocess, whose stdout takes the spill's bytes as they are.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from support.cli import cli, no_traceback
from support.vector_files import VECTOR_FILES

from trio_agent.cli import main, show
from trio_agent.log import encode_event, encode_header
from trio_agent.log.events import Header
from trio_agent.testing.loggen import generate_log

MODES = {"plain": ["--no-color"], "color-full": ["--color", "--full"]}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def two_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    """``show argv`` with no usable temporary directory: the spill fails at its first write."""
    blocked = tmp_path / "not-a-directory"
    blocked.write_bytes(b"")
    with monkeypatch.context() as patch:
        patch.setattr(show._Spill, "_IN_MEMORY", 1)
        patch.setattr(tempfile, "tempdir", str(blocked))
        with pytest.raises(NotADirectoryError):
            tempfile.mkstemp()  # the control: the directory is unusable indeed
        return run("show", *argv)


@pytest.mark.parametrize(("mode", "spill"), [("plain", "in-memory"), ("color-full", "file")])
@pytest.mark.parametrize("cid", sorted(VECTOR_FILES))
def test_one_pass_equals_two_passes_on_every_vector(
    cid: str, mode: str, spill: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(VECTOR_FILES[cid])
    argv = (*MODES[mode], str(path))
    expected = two_passes(monkeypatch, tmp_path, *argv)
    if spill == "file":
        monkeypatch.setattr(show._Spill, "_IN_MEMORY", 1)
    assert run("show", *argv) == expected


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("seed", range(6))
def test_one_pass_equals_two_passes_on_generated_logs(
    seed: int, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = generate_log(seed, 8)
    path = tmp_path / "log.jsonl"
    header = encode_header(Header("s", 1_700_000_000_000))
    path.write_bytes(header + b"".join(map(encode_event, events[: len(events) - seed])))
    argv = (*MODES[mode], str(path))
    expected = two_passes(monkeypatch, tmp_path, *argv)
    assert expected[0] == 0 and expected[1].count("\n") > 20
    monkeypatch.setattr(show._Spill, "_IN_MEMORY", 100)  # rolls over to a file early
    assert run("show", *argv) == expected


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_subprocess_writes_the_same_bytes(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = generate_log(7, 12)
    path = tmp_path / "log.jsonl"
    header = encode_header(Header("s", 1_700_000_000_000))
    broken = (
        b'{"seq":999,"time":0,"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}\n'
    )
    path.write_bytes(header + b"".join(map(encode_event, events)) + broken)
    argv = (*MODES[mode], str(path))
    code, out, err = two_passes(monkeypatch, tmp_path, *argv)
    assert code == 1 and "!! line" in out  # the control: a broken rule, shown up to its line
    proc = no_traceback(cli("show", *argv))
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, out, err)
