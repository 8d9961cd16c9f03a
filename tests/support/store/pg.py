"""Helpers for the tests that run child processes over a store backend (pg_child.py) and that
wait for a database lease to lapse on the database clock (never a verdict on time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import trio

from support.lines import LineReader
from support.procenv import child_env

#: The store tests' folder, where the child programs live.
HERE = Path(__file__).resolve().parents[2] / "store"
CHILD = HERE / "pg_child.py"
HANG_GUARD = 120.0  # only a hung child ever reaches it

TURN: list[tuple[str, dict[str, Any]]] = [
    ("turn/start", {"turn": 1}),
    ("step/start", {"turn": 1, "step": 1}),
    ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": "hi"}}),
]


def close_turn(session: Any, turn: int = 1) -> None:
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def rows(dsn: str, sid: str) -> list[bytes]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(
            "SELECT seq, line FROM trio_agent_event WHERE session_id = %s ORDER BY seq", (sid,)
        )
        got = cur.fetchall()
    assert [s for s, _ in got] == list(range(len(got)))
    return [bytes(line) for _, line in got]


def force_expiry(dsn: str, sid: str) -> None:
    """Make the session's lease lapse now, behind its writer's back (as if it had paused)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE trio_agent_session SET expires = clock_timestamp() WHERE session_id = %s",
            (sid,),
        )


async def wait_lease_lapsed(dsn: str, sid: str) -> None:
    """Wait, on the database clock, until the session's lease has expired (no time limit)."""
    while True:
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT extract(epoch FROM expires - clock_timestamp()) FROM trio_agent_session "
                "WHERE session_id = %s",
                (sid,),
            ).fetchone()
        assert row is not None
        if row[0] is None or row[0] <= 0:
            return
        await trio.sleep(float(row[0]) + 0.01)


class Child:
    """A pg_child.py process; lines are read with a hang guard, never a verdict timeout."""

    def __init__(self, *argv: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_env(),
        )
        assert self.proc.stdout is not None
        self._lines = LineReader(self.proc.stdout.fileno(), what="pg_child.py", guard=HANG_GUARD)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def read(self) -> list[str]:
        try:
            return self._lines.words()
        except EOFError as exc:
            raise EOFError(f"{exc} (exit status {self.proc.wait()})") from None

    async def aread(self) -> list[str]:
        return await trio.to_thread.run_sync(self.read)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
