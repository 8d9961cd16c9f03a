"""The database side of the command line: ``--store DSN`` (spec/cli.md §Sessions in a database).

The file commands read a stored session back as the bytes of its JSONL log
(:meth:`PostgresStore.read_log`) and then run exactly the code they run on a file;
``repair --write`` goes through :meth:`PostgresStore.open` (:mod:`.repair_write`), so the
lease and fencing rules apply to it as to any writer. Reads never create the tables: a
database the store never used simply holds no session. Only this module (and the store
itself) imports psycopg.
"""

from __future__ import annotations

import psycopg
import trio

from ..store.errors import SessionNotFound, StoreError
from ..store.postgres import PostgresStore, StoredLog

__all__ = ["list_sessions", "read_session"]


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
            ids = await store.session_ids()
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
