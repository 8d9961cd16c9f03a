"""The database side of the command line: ``--store DSN`` (spec/cli.md §Sessions in a database).

The file commands read a stored session back as the bytes of its JSONL log
(:meth:`PostgresStore.read_log`) and then run exactly the code they run on a file;
``repair --write`` goes through :meth:`PostgresStore.open`, so the lease and fencing rules
apply to it as to any writer. Reads never create the tables: a database the store never
used simply holds no session. Only this module (and the store itself) imports psycopg.
"""

from __future__ import annotations

from typing import TextIO

import orjson
import psycopg
import trio

from ..log.codec import event_to_json
from .errors import SessionNotFound, StoreError
from .postgres import PostgresStore, StoredLog
from .recovery import DEFAULT_REAPER, ReaperArg, scan_log

__all__ = ["list_sessions", "read_session", "repair_session"]

def _no_tables(exc: StoreError) -> bool:
    return isinstance(exc.__cause__, psycopg.errors.UndefinedTable)


def read_session(dsn: str, session_id: str) -> StoredLog:
    """The stored session as a JSONL log (``trio.run``); store errors propagate."""

    async def read() -> StoredLog:
        try:
            return await PostgresStore(dsn).read_log(session_id)
        except StoreError as exc:
            if _no_tables(exc):
                raise SessionNotFound(session_id) from None
            raise

    return trio.run(read)


def list_sessions(dsn: str) -> list[tuple[str, StoredLog | StoreError]]:
    """Every stored session with its log, or the error reading it (``trio.run``)."""

    async def read() -> list[tuple[str, StoredLog | StoreError]]:
        store = PostgresStore(dsn)
        try:
            ids = await store.list()
        except StoreError as exc:
            if _no_tables(exc):
                return []
            raise
        found: list[tuple[str, StoredLog | StoreError]] = []
        for session_id in ids:
            try:
                found.append((session_id, await store.read_log(session_id)))
            except SessionNotFound:  # deleted meanwhile
                continue
            except StoreError as exc:
                found.append((session_id, exc))
        return found

    return trio.run(read)


def repair_session(
    dsn: str,
    session_id: str,
    where: str,
    out: TextIO,
    err: TextIO,
    *,
    reap_orphans: ReaperArg = DEFAULT_REAPER,
) -> None:
    """``repair --write`` of a stored session: take its lease (``open``: the cold open's
    repair, fenced by the new token), print the closers it appended, give the lease back.

    Store errors (``LeaseHeld``, ``SessionCorrupt``, ``WriteFailed``, an unreachable
    database) propagate for the caller to turn into its one line.
    """

    async def repair() -> None:
        async with PostgresStore(dsn, reap_orphans=reap_orphans) as store:
            before = await store.read_log(session_id)
            kept = len(scan_log(before.data, where, session_id).events)
            session = await store.open(session_id)
            closers = list(session.events[kept:])
            await session.aclose()
        for event in closers:
            out.write(orjson.dumps(event_to_json(event)).decode() + "\n")
        if closers:
            print(
                f"{where}: repaired: {len(closers)} closing event(s) appended, "
                f"{len(session.events)} events",
                file=err,
            )
        else:
            print(f"{where}: nothing to repair ({len(session.events)} events, balanced)", file=err)

    trio.run(repair)
