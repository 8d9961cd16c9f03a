"""``StoreKit``: one store backend seen through what the contract promises (test_contract.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from support.store.helpers import EIO, FaultyOps
from support.store.pg import wait_lease_lapsed
from trio_agent.log import split_log
from trio_agent.store import JsonlStore, PostgresStore, escape_id

__all__ = ["StoreKit"]


class StoreKit:
    """One backend, seen through what the contract promises.

    ``make(**kw)`` builds a store (not entered); ``durable(sid)`` is the session's durable
    event lines (exact bytes, no newline) read behind the store's back; ``failing()`` makes
    every write attempt of the sink fail, for real, until the block exits (JSONL: the file
    operations raise EIO; PostgreSQL: a constraint the rows cannot satisfy); ``spec`` names
    the backend for the child processes (``jsonl:<root>`` or ``pg:<dsn>``).
    """

    def __init__(self, kind: str, where: str) -> None:
        self.kind = kind
        self.where = where
        self.spec = f"{'jsonl' if kind == 'jsonl' else 'pg'}:{where}"
        self._ops = FaultyOps()

    def make(self, **kw: Any) -> Any:
        kw.setdefault("reap_orphans", None)
        if self.kind == "jsonl":
            return JsonlStore(self.where, file_ops=self._ops, **kw)
        return PostgresStore(self.where, **kw)

    async def wait_cold(self, sid: str) -> None:
        """Wait until a dead writer's claim is gone (JSONL: at once; its flock died with it)."""
        if self.kind == "postgres":
            await wait_lease_lapsed(self.where, sid)

    def overwrite(self, sid: str, index: int, line: bytes) -> None:
        """Replace the durable event line at ``index`` behind the store's back (damage)."""
        if self.kind == "jsonl":
            path = Path(self.where) / escape_id(sid) / "session.jsonl"
            parts = path.read_bytes().split(b"\n")
            parts[index + 1] = line
            path.write_bytes(b"\n".join(parts))
            return
        with psycopg.connect(self.where, autocommit=True) as conn:
            conn.execute(
                "UPDATE trio_agent_event SET line = %s WHERE session_id = %s AND seq = %s",
                (line, sid, index),
            )

    def replace_checkpoint(self, sid: str, change: Callable[[bytes], bytes]) -> None:
        """Replace the session's checkpoint (JSONL: its sidecar; PostgreSQL: its row's body)
        with ``change`` of it, behind the store's back (damage)."""
        if self.kind == "jsonl":
            path = Path(self.where) / escape_id(sid) / "session.jsonl.checkpoint"
            path.write_bytes(change(path.read_bytes()))
            return
        with psycopg.connect(self.where, autocommit=True) as conn:
            row = conn.execute(
                "SELECT body FROM trio_agent_checkpoint WHERE session_id = %s", (sid,)
            ).fetchone()
            assert row is not None, sid
            conn.execute(
                "UPDATE trio_agent_checkpoint SET body = %s WHERE session_id = %s",
                (change(bytes(row[0])), sid),
            )

    def durable(self, sid: str) -> list[bytes]:
        if self.kind == "jsonl":
            path = Path(self.where) / escape_id(sid) / "session.jsonl"
            return [line for _, line in split_log(path.read_bytes()).lines]
        with psycopg.connect(self.where) as conn:
            got = conn.execute(
                "SELECT seq, line FROM trio_agent_event WHERE session_id = %s ORDER BY seq",
                (sid,),
            ).fetchall()
        assert [s for s, _ in got] == list(range(len(got)))
        return [bytes(line) for _, line in got]

    @contextlib.contextmanager
    def failing(self) -> Iterator[None]:
        if self.kind == "jsonl":
            self._ops.fail["write"] = [EIO] * 1_000_000
            try:
                yield
            finally:
                self._ops.fail["write"] = []
            return
        with psycopg.connect(self.where, autocommit=True) as conn:
            conn.execute(
                "ALTER TABLE trio_agent_event ADD CONSTRAINT trio_agent_fault CHECK (false) "
                "NOT VALID"
            )
            try:
                yield
            finally:
                conn.execute("ALTER TABLE trio_agent_event DROP CONSTRAINT trio_agent_fault")
