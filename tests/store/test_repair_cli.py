"""run_repair_file: what ``trio-agent repair FILE --write`` prints and returns."""

from __future__ import annotations

import fcntl
import io
import os
import random
from pathlib import Path

from support.store.helpers import assert_valid_balanced, sha256
from support.store.workload import workload

from trio_agent.cli.errors import BROKEN, OK, REFUSED, UNREADABLE
from trio_agent.cli.repair_write import run_repair_file
from trio_agent.log import encode_event
from trio_agent.store import Session

HEADER = b'{"type":"session","version":1,"id":"s","createdAt":1}\n'


def crashed(tmp_path: Path, tail: bytes = b'{"seq":') -> Path:
    s = Session.in_memory("s", clock=lambda: 3)
    for type_, data, _ in workload(random.Random(4), 1, "a", 2):
        s.append(type_, data)
    s.append("turn/start", {"turn": 3})
    s.append("step/start", {"turn": 3, "step": 1})
    path = tmp_path / "s" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(HEADER + b"".join(encode_event(e) for e in s.events) + tail)
    return path


def run(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_repair_file(str(path), out, err, reap_orphans=None)
    return code, out.getvalue(), err.getvalue()


def test_repairs_in_place_and_prints_the_closers(tmp_path: Path) -> None:
    path = crashed(tmp_path)
    code, out, err = run(path)
    assert code == OK
    assert [line.count('"type"') for line in out.splitlines()] == [1, 1]
    assert "cut 7 bytes of torn tail" in err and "repaired: 2 closing event(s)" in err
    assert_valid_balanced(path)
    code, out, err = run(path)
    assert (code, out) == (OK, "") and "nothing to repair" in err


def test_refusals_are_one_line_and_change_nothing(tmp_path: Path) -> None:
    path = crashed(tmp_path)
    data = path.read_bytes()
    lines = data.split(b"\n")
    lines[3] = b"garbage"
    path.write_bytes(b"\n".join(lines))
    before = sha256(path)
    code, _, err = run(path)
    assert code == UNREADABLE and err.count("\n") == 1 and ":4: " in err
    lines[3] = lines[4]  # a repeated event: I1, inside committed data
    path.write_bytes(b"\n".join(lines))
    code, _, err = run(path)
    assert code == BROKEN and "I1" in err and err.count("\n") == 1
    assert sha256(path) != before  # (we rewrote it ourselves above)
    assert run(tmp_path / "missing")[0] == UNREADABLE
    assert run(tmp_path)[0] == UNREADABLE


def test_a_live_session_is_refused(tmp_path: Path) -> None:
    path = crashed(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        code, _, err = run(path)
    finally:
        os.close(fd)
    assert code == REFUSED and "is live" in err
