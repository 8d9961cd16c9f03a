"""``trio-agent sessions``: the sessions under a root, each live, cold or crashed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.cli import NO_WITHOUT_DAC, WITHOUT_DAC, cli
from support.polling import HANG_GUARD
from support.terminal import sent_to_terminal

from trio_agent.log import Header, encode_event, encode_header
from trio_agent.store import JsonlStore
from trio_agent.testing.loggen import generate_log

#: Creates session ID under ROOT with turn 1 open, prints "ready", waits for stdin to close.
HOLDER = textwrap.dedent(
    """
    import sys, trio
    from trio_agent.store import JsonlStore

    async def main() -> None:
        async with JsonlStore(sys.argv[1], reap_orphans=None) as store:
            session = await store.create(sys.argv[2])
            session.append("turn/start", {"turn": 1})
            await session.flush()
            print("ready", flush=True)
            await trio.to_thread.run_sync(sys.stdin.read)

    trio.run(main)
    """
)


def holder(root: Path, session_id: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def write(root: Path, session_id: str, body: bytes) -> Path:
    path = JsonlStore(root).path_of(session_id)
    path.parent.mkdir(parents=True)
    path.write_bytes(encode_header(Header(session_id, 0)) + body)
    return path


def test_sessions_lists_live_cold_crashed_and_corrupt(tmp_path: Path) -> None:
    events = generate_log(3, 2)
    write(tmp_path, "balanced", b"".join(map(encode_event, events)))
    bad = b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'
    bad += b'{"seq":1,"time":1,"type":"turn/start","data":{"turn":2}}\n'  # I2, then committed:
    bad += b'{"seq":2,"time":1,"type":"turn/end","data":{"turn":2,"reason":{"kind":"completed"}}}\n'
    corrupt = write(tmp_path, "broken", bad)
    torn = b"".join(map(encode_event, events)) + b'{"seq":'  # a writer died mid-line
    write(tmp_path, "torn", torn)
    crashed = holder(tmp_path, "crashed")
    crashed.kill()
    crashed.wait()
    live = holder(tmp_path, "Live")
    try:
        proc = cli("sessions", "--root", str(tmp_path))
    finally:
        assert live.stdin is not None
        live.stdin.close()
        live.wait(HANG_GUARD)
    for p in (crashed, live):
        assert p.stdout is not None and p.stdin is not None
        p.stdout.close()
        p.stdin.close()
    assert (proc.returncode, proc.stderr) == (0, "")
    header, *rows = [line.split() for line in proc.stdout.splitlines()]
    assert header == ["ID", "TURNS", "EVENTS", "LAST", "ACTIVITY", "STATE"]
    by_id = {row[0]: row for row in rows}
    assert sorted(by_id) == ["Live", "balanced", "broken", "crashed", "torn"]
    assert by_id["balanced"][1:3] == ["2", str(len(events))] and by_id["balanced"][-1] == "cold"
    assert by_id["torn"][1:3] == ["2", str(len(events))]
    assert " ".join(by_id["torn"][5:]) == (
        f"cold, a tail to cut: 7 bytes from line {len(events) + 2} (run --session torn cuts it)"
    )
    assert (
        " ".join(by_id["crashed"][5:]) == "crashed: turn 1 open (run --session crashed repairs it)"
    )
    assert " ".join(by_id["Live"][5:]) == f"live (process {live.pid}), turn 1 running"
    assert " ".join(by_id["broken"][1:]) == f"- - - corrupt (trio-agent check {corrupt})"


def test_sessions_lists_a_log_the_store_does_not_as_what_run_would_find(tmp_path: Path) -> None:
    """A session directory whose log has a header that cannot be read, or one naming another
    session (a directory copied or renamed), is not a session the store lists; ``sessions``
    once passed both over ("no sessions here") while ``run --session ID`` refused them. A
    directory no id escapes to is still no session's."""
    write(tmp_path, "kept", b"")
    copied = JsonlStore(tmp_path).path_of("copy")
    copied.parent.mkdir()
    copied.write_bytes(encode_header(Header("kept", 0)))
    garbled = JsonlStore(tmp_path).path_of("garbled")
    garbled.parent.mkdir()
    garbled.write_bytes(b"garbage\n")
    (tmp_path / "Not.An.Id").mkdir()  # upper case and dots: no id's directory
    (tmp_path / "Not.An.Id" / "session.jsonl").write_bytes(encode_header(Header("kept", 0)))
    proc = cli("sessions", "--root", str(tmp_path))
    assert (proc.returncode, proc.stderr) == (0, "")
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in proc.stdout.splitlines()[1:]}
    assert sorted(rows) == ["copy", "garbled", "kept"]
    assert rows["copy"] == "- - - corrupt: the header names session 'kept', not 'copy'"
    assert rows["garbled"] == f"- - - unreadable (trio-agent check {garbled})"
    refused = cli("run", "--root", str(tmp_path), "--session", "copy")
    assert refused.returncode == 1 and "the header names session 'kept', not 'copy'" in (
        refused.stderr
    )


@pytest.mark.parametrize("command", [("check",), ("show",), ("repair",), ("repair", "--write")])
def test_a_session_read_from_a_store_directory_is_the_one_its_header_names(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """``--store DIR --session copy`` reads ``copy/session.jsonl``; a log there whose header
    names another session is corrupt (exit 1), as the store's cold open finds it and
    ``sessions`` lists it, and is left as it was. As a bare ``FILE`` it is valid (a file has
    no expected id): once ``check --store`` said ``ok`` and ``repair --write`` repaired it."""
    log = JsonlStore(tmp_path).path_of("copy")
    log.parent.mkdir()
    opened = b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'  # crashed mid-turn
    log.write_bytes(encode_header(Header("kept", 0)) + opened)
    before = log.read_bytes()
    done = cli(*command, "--store", str(tmp_path), "--session", "copy")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"{log}:1: the header names session 'kept', not 'copy'\n"
    assert log.read_bytes() == before
    assert cli("check", str(log)).returncode == 0  # the same file, as a file


def test_sessions_shows_an_id_s_control_characters_and_quotes_it_in_a_hint(
    tmp_path: Path,
) -> None:
    """An id is any text (spec/persistence.md §1): one holding an escape sequence is shown,
    not sent to the terminal; the hint quotes an id as a shell needs it; a long id does not
    widen the ID column of every row."""
    opened = b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'
    write(tmp_path, "my \x1b]0;pwned\x07 session", opened)
    write(tmp_path, "x" * 300, b"")
    write(tmp_path, "short", b"")
    proc = cli("sessions", "--root", str(tmp_path))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert not sent_to_terminal(proc.stdout)
    lines = proc.stdout.splitlines()
    crashed = next(line for line in lines if line.startswith("my "))
    assert crashed.endswith(
        "crashed: turn 1 open (run --session 'my ␛]0;pwned␇ session' repairs it)"
    )
    short = next(line for line in lines if line.startswith("short "))
    assert lines[0].index("TURNS") == len(short) - len(short[5:].lstrip()) == 42  # 40 + 2


def test_sessions_of_a_missing_root(tmp_path: Path) -> None:
    proc = cli("sessions", "--root", str(tmp_path / "nope"))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"{tmp_path / 'nope'}: no such directory (give the store's directory with --root)\n"
    )


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_sessions_passes_over_a_non_file_in_a_log_s_place(tmp_path: Path, kind: str) -> None:
    """A FIFO where a session's log belongs once blocked the listing for ever (nobody opens
    its other end here), and a directory there failed it ("cannot read: Is a directory",
    exit 2). Neither is a log, so neither is listed."""
    write(tmp_path, "real", b"")
    other = JsonlStore(tmp_path).path_of("other")
    other.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(other)
    else:
        other.mkdir()
    proc = cli("sessions", "--root", str(tmp_path))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["ID", "real"]


@pytest.mark.skipif(NO_WITHOUT_DAC is not None, reason=NO_WITHOUT_DAC or "")
def test_sessions_of_a_root_it_cannot_read_is_one_line(tmp_path: Path) -> None:
    """A --root without read permission once ended in "internal error: PermissionError"."""
    root = tmp_path / "closed"
    write(root, "s1", b"")
    root.chmod(0o300)  # may enter and write, not list
    try:
        proc = cli("sessions", "--root", str(root), prefix=WITHOUT_DAC)
    finally:
        root.chmod(0o700)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"{root}: cannot read: Permission denied\n"
