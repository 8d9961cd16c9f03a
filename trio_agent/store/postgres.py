"""``PostgresStore``: sessions as rows of a PostgreSQL database (spec/persistence.md §10).

Same contract as :class:`~trio_agent.store.JsonlStore`, same :class:`Session` (log core,
checker, observers, write-behind batching and flush semantics); only the sink and liveness
differ. The header is a row of ``trio_agent_session``, events are rows
``(session_id, seq, line)`` of ``trio_agent_event`` (``line`` holds the exact bytes a JSONL
file would, without the newline), and a writer batch is one transaction.

Liveness is a **lease** instead of a ``flock``: the session row carries ``owner``,
``expires`` (database clock) and a fencing ``token`` that grows on every takeover. A live
writer renews its lease from a task in the store's nursery; every batch and every renewal is
conditional on the token in the same transaction, so a writer that lost its lease (paused past
its expiry while another process took over) writes nothing more and gets
:class:`~trio_agent.store.SessionFenced`.

The driver is psycopg 3, blocking, run in worker threads (``trio.to_thread.run_sync``) the way
the JSONL writer runs its file I/O; each live session has its own connection, guarded by a lock
so the writer's batches and the renewals never interleave inside one transaction.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, Final, TypeVar

import attrs
import psycopg
import trio

from ..log import checkpoint as ck
from ..log.codec import decode_header, encode_event, encode_header
from ..log.envelope import Event, Header
from ..log.errors import HeaderError
from ..log.scan import Resume, lines_of
from .errors import (
    LeaseHeld,
    LiveTurnOpen,
    SessionCorrupt,
    SessionExists,
    SessionFenced,
    SessionLocked,
    SessionNotFound,
    StoreError,
    WriteFailed,
)
from .fileops import FileOps
from .ids import check_id
from .lifecycle import SessionNursery, StoreLifecycle
from .recovery import (
    DEFAULT_REAPER,
    ColdOpen,
    ColdScan,
    Reaper,
    cold_scan,
    cold_scan_lines,
    complete,
)
from .session import Clock, Session, wall_clock_ms
from .write_policy import CHECKPOINT_EVERY
from .writer import (
    DEFAULT_HARD_LIMIT,
    DEFAULT_SOFT_LIMIT,
    DEFAULT_WINDOW,
    CheckpointTarget,
    Writer,
    checkpoint_target,
)

__all__ = ["DEFAULT_LEASE", "SCHEMA", "PostgresStore", "StoredLog"]

_log = logging.getLogger("trio_agent.store")

#: Default lease length in seconds (spec/persistence.md §10.2): how long a dead writer's
#: session stays locked before another process may take it over.
DEFAULT_LEASE: Final = 15.0
#: The lease is renewed this many times per lease length.
RENEWALS_PER_LEASE: Final = 3
#: Seconds a connection attempt may take before the attempt counts as failed.
CONNECT_TIMEOUT: Final = 10

#: The tables, created on first use (under an advisory lock: concurrent ``CREATE TABLE IF
#: NOT EXISTS`` of the same table can fail in PostgreSQL).
SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS trio_agent_session (
    session_id text PRIMARY KEY,
    header bytea NOT NULL,
    owner text,
    token bigint NOT NULL,
    expires timestamptz
);
CREATE TABLE IF NOT EXISTS trio_agent_event (
    session_id text NOT NULL REFERENCES trio_agent_session (session_id) ON DELETE CASCADE,
    seq bigint NOT NULL CHECK (seq >= 0),
    line bytea NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS trio_agent_checkpoint (
    session_id text PRIMARY KEY REFERENCES trio_agent_session (session_id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    body bytea NOT NULL
);
"""
_SCHEMA_LOCK: Final = 0x7472696F6167  # "trioag": the advisory lock serializing SCHEMA

_T = TypeVar("_T")

#: Sessions live in this process, by (dsn, id).
_LIVE: dict[tuple[str, str], Session] = {}


def default_owner() -> str:
    """``host:pid:random``: unique per store instance, readable in a ``SessionLocked``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _fmt_time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")


@attrs.frozen
class StoredLog:
    """A stored session read back as a JSONL log, with its lease (for the file commands)."""

    #: The header line and every event line, each ending in a newline: the bytes a JSONL
    #: file of this session would hold.
    data: bytes
    #: True while the lease is current (a writer holds the session, here or elsewhere).
    live: bool
    #: The lease's owner and expiry (ISO 8601, database clock), when ``live``.
    owner: str | None = None
    expires: str | None = None


class _Fenced(OSError):
    """Internal: carries a :class:`SessionFenced` through the writer's failure path."""

    def __init__(self, error: SessionFenced) -> None:
        super().__init__(str(error))
        self.error = error


def _unavailable(exc: BaseException) -> ConnectionError:
    """A database failure as the ``OSError`` the writer retries (one line, no DSN)."""
    text = str(exc).strip().splitlines()
    return ConnectionError(f"database: {text[0] if text else type(exc).__name__}")


class _Retired(ConnectionError):
    """The session's connection was closed for good: its session has closed."""


class _Conn:
    """One psycopg connection, reconnected on demand, used by one thread at a time, until its
    session's last transaction (:meth:`last_transaction`) closes it for good."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._conn: psycopg.Connection[Any] | None = None
        self.lock = threading.Lock()
        self._retired = False

    def _open(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            self._conn = None
            conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
            self._conn = conn
        return conn

    @contextlib.contextmanager
    def _locked_transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        """A transaction, the lock held; database failures become ``ConnectionError``."""
        try:
            conn = self._open()
            with conn.transaction(), conn.cursor() as cur:
                yield cur
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            self.close_now()
            raise _unavailable(exc) from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        """A transaction on this connection; database failures become ``ConnectionError``,
        and one begun after the last transaction is :class:`_Retired`."""
        with self.lock:
            if self._retired:
                raise _Retired("the session is closed")
            with self._locked_transaction() as cur:
                yield cur

    @contextlib.contextmanager
    def last_transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        """The session's last transaction (giving its lease up), after which the connection
        is closed for good. No other begins once it has: each raises :class:`_Retired`
        rather than connecting again. A renewal handed to its thread before the session
        closed, and run after, would otherwise extend the lease just given up, on a
        connection nobody closes."""
        with self.lock:
            self._retired = True
            try:
                with self._locked_transaction() as cur:
                    yield cur
            finally:
                self.close_now()

    def retire(self) -> None:
        """Close for good without a last transaction (a session fenced: no lease to give)."""
        with self.lock:
            self._retired = True
            self.close_now()

    def close_now(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def _fence(cur: psycopg.Cursor[Any], session_id: str, token: int) -> None:
    """Hold the session row (``FOR SHARE``) if ``token`` is still current, else raise.

    The row lock lasts until the transaction ends, so a takeover (an ``UPDATE`` of that row)
    is ordered entirely before or entirely after this writer's transaction.
    """
    cur.execute(
        "SELECT owner, token FROM trio_agent_session WHERE session_id = %s FOR SHARE",
        (session_id,),
    )
    row = cur.fetchone()
    if row is None or row[1] != token:
        owner = None if row is None else row[0]
        raise _Fenced(SessionFenced(session_id, owner, None if row is None else row[1]))


class PgWriter(Writer):
    """The write-behind writer of a database session: same batching, rows instead of bytes.

    A batch becomes one transaction: fence on the lease token, insert every line with its seq.
    A failed attempt (connection lost, server restarted) is retried like a failed ``write``;
    if the failed attempt had in fact committed (its acknowledgement was lost), the retry finds
    its rows, checks they are the same bytes and inserts only the rest, so nothing is lost or
    duplicated.
    """

    def __init__(
        self,
        session_id: str,
        conn: _Conn,
        token: int,
        next_seq: int,
        *,
        window: float,
        soft_limit: int,
        hard_limit: int,
        on_close: Callable[[], None],
        length: int = 0,
        checkpoints: CheckpointTarget | None = None,
    ) -> None:
        """``length`` is the log's length as a JSONL file would hold it (the header line and
        every event line, newlines included): the checkpoints' offsets count in it."""
        super().__init__(
            session_id,
            -1,
            length,
            ops=FileOps(),
            window=window,
            soft_limit=soft_limit,
            hard_limit=hard_limit,
            on_close=on_close,
            checkpoints=checkpoints,
        )
        self._conn = conn
        self._token = token
        self._next_seq = next_seq
        self._uncertain = False  # the last attempt failed: it may have committed
        self.fenced: SessionFenced | None = None
        self._lost = trio.Event()  # set (in the trio thread) once ``fenced`` is

    @property
    def token(self) -> int:
        return self._token

    @property
    def lost(self) -> SessionFenced | None:
        """The :class:`SessionFenced` that ended this writer's writing, if it was fenced."""
        return self.fenced

    async def wait_lost(self) -> SessionFenced:
        """Return the :class:`SessionFenced` once this writer is fenced (batch or renewal)."""
        await self._lost.wait()
        assert self.fenced is not None
        return self.fenced

    def _mark_fenced(self, error: SessionFenced) -> None:
        """Record the fencing (any thread): no further attempt touches the database."""
        if self.fenced is None:
            self.fenced = error
            _log.error("%s", error)

    def fence(self, error: SessionFenced) -> None:
        """Mark this writer as fenced and wake :meth:`wait_lost` (trio thread only)."""
        self._mark_fenced(error)
        self._lost.set()

    async def _write_batch(self) -> None:
        await super()._write_batch()
        if self.fenced is not None:  # fenced by this batch's transaction, in the worker thread
            self._lost.set()

    def submit(self, line: bytes) -> None:
        if self.fenced is not None:
            return  # recorded in memory only; a fenced writer writes nothing more
        super().submit(line)

    async def flush(self) -> None:
        if self.fenced is not None:
            self._lost.set()
            await trio.lowlevel.checkpoint()
            raise self.fenced
        try:
            await super().flush()
        except WriteFailed as exc:
            if isinstance(exc.__cause__, _Fenced):
                raise exc.__cause__.error from None
            raise

    async def wait_writable(self) -> None:
        if self.fenced is not None:
            self._lost.set()
            await trio.lowlevel.checkpoint()
            raise self.fenced
        try:
            await super().wait_writable()
        except WriteFailed as exc:
            if isinstance(exc.__cause__, _Fenced):
                raise exc.__cause__.error from None
            raise

    def _retryable(self, exc: OSError) -> bool:
        return not isinstance(exc, _Fenced)  # fenced: logged once, as an error, by fence()

    def _write_blocking(self, data: bytes) -> None:
        """One batch attempt, in a worker thread: one fenced transaction."""
        if self.fenced is not None:
            raise _Fenced(self.fenced)
        lines = data[:-1].split(b"\n")
        first = self._next_seq
        try:
            with self._conn.transaction() as cur:
                _fence(cur, self._id, self._token)
                start = 0
                if self._uncertain:
                    start = _already_written(cur, self._id, first, lines)
                if start < len(lines):
                    seqs = list(range(first + start, first + len(lines)))
                    cur.execute(
                        "INSERT INTO trio_agent_event (session_id, seq, line) "
                        "SELECT %s, s, l FROM unnest(%s::bigint[], %s::bytea[]) AS t(s, l)",
                        (self._id, seqs, lines[start:]),
                    )
        except _Fenced as exc:
            self._mark_fenced(exc.error)  # a worker thread: _write_batch wakes wait_lost
            raise
        except OSError:
            self._uncertain = True
            raise
        except psycopg.Error as exc:  # e.g. a constraint: report it, keep the batch queued
            self._uncertain = True
            raise _unavailable(exc) from exc
        self._uncertain = False
        self._next_seq += len(lines)
        self._durable_length += len(data)

    def _store_checkpoint(self, checkpoint: ck.Checkpoint) -> int:
        """The checkpoint as the session's row of ``trio_agent_checkpoint``, in a transaction
        fenced like a batch (spec/persistence.md §10.1). Raises ``OSError``."""
        if self.fenced is not None:
            raise _Fenced(self.fenced)
        data = ck.encode(checkpoint)
        try:
            with self._conn.transaction() as cur:
                _fence(cur, self._id, self._token)
                cur.execute(
                    "INSERT INTO trio_agent_checkpoint (session_id, seq, body) "
                    "VALUES (%s, %s, %s) ON CONFLICT (session_id) "
                    "DO UPDATE SET seq = EXCLUDED.seq, body = EXCLUDED.body",
                    (self._id, checkpoint.seq, data),
                )
        except _Fenced as exc:
            self._mark_fenced(exc.error)
            raise
        except psycopg.Error as exc:
            raise _unavailable(exc) from exc
        return len(data)

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._release_lease)

    def _release(self) -> None:
        """Nothing to close synchronously: :meth:`aclose` releases the lease in a thread."""

    def _release_lease(self) -> None:
        """Give the lease up (the session is cold at once), unless it was lost; close the
        connection for good either way (a renewal still on its way then renews nothing)."""
        if self.fenced is not None:
            self._conn.retire()
            return
        try:
            with self._conn.last_transaction() as cur:
                cur.execute(
                    "UPDATE trio_agent_session SET owner = NULL, expires = NULL "
                    "WHERE session_id = %s AND token = %s",
                    (self._id, self._token),
                )
        except OSError as exc:  # the lease then simply expires
            _log.warning("session %r: releasing the lease failed (%s)", self._id, exc)

    def renew_blocking(self, lease: float) -> None:
        """Extend the lease to ``lease`` seconds from now (database clock), if still ours."""
        with self._conn.transaction() as cur:
            cur.execute(
                "UPDATE trio_agent_session "
                "SET expires = clock_timestamp() + make_interval(secs => %s) "
                "WHERE session_id = %s AND token = %s RETURNING token",
                (lease, self._id, self._token),
            )
            if cur.fetchone() is None:
                cur.execute(
                    "SELECT owner, token FROM trio_agent_session WHERE session_id = %s",
                    (self._id,),
                )
                row = cur.fetchone()
                raise _Fenced(
                    SessionFenced(
                        self._id, None if row is None else row[0], None if row is None else row[1]
                    )
                )


def _already_written(
    cur: psycopg.Cursor[Any], session_id: str, first: int, lines: list[bytes]
) -> int:
    """After an uncertain attempt: how many of ``lines`` are already rows (same bytes)."""
    cur.execute(
        "SELECT seq, line FROM trio_agent_event WHERE session_id = %s AND seq >= %s ORDER BY seq",
        (session_id, first),
    )
    rows = cur.fetchall()
    for i, (seq, line) in enumerate(rows):
        if seq != first + i or i >= len(lines) or bytes(line) != lines[i]:
            raise ConnectionError(
                f"session {session_id!r}: the rows from seq {first} are not this writer's batch"
            )
    return len(rows)


class PostgresStore(StoreLifecycle):
    """Sessions stored in a PostgreSQL database, with leases and fencing tokens.

    Use it as an async context manager, like :class:`~trio_agent.store.JsonlStore`::

        async with PostgresStore("host=/run/pg dbname=agents") as store:
            session = await store.create("s1")   # or: await store.open("s1")

    ``dsn`` is any libpq connection string or URI. ``lease`` is the lease length in seconds
    (renewed every ``lease / 3``); ``owner`` names this store's writers in ``SessionLocked``
    and ``SessionFenced`` messages (default ``host:pid:random``). ``clock``, ``window``,
    ``soft_limit``, ``hard_limit``, ``reap_orphans`` and ``checkpoint_every`` are as for
    ``JsonlStore``; the checkpoint is a row of ``trio_agent_checkpoint`` (spec/persistence.md
    §10.1).
    """

    def __init__(
        self,
        dsn: str,
        *,
        lease: float = DEFAULT_LEASE,
        owner: str | None = None,
        clock: Clock | None = None,
        window: float = DEFAULT_WINDOW,
        soft_limit: int = DEFAULT_SOFT_LIMIT,
        hard_limit: int = DEFAULT_HARD_LIMIT,
        reap_orphans: Reaper | None = DEFAULT_REAPER,
        checkpoint_every: int | None = CHECKPOINT_EVERY,
    ) -> None:
        if not lease > 0:
            raise ValueError("the lease must be > 0 seconds")
        if window < 0:
            raise ValueError("the batching window must be >= 0 seconds")
        if not 0 < soft_limit <= hard_limit:
            raise ValueError("need 0 < soft_limit <= hard_limit")
        if checkpoint_every is not None and checkpoint_every < 1:
            raise ValueError("checkpoint_every must be >= 1 byte, or None")
        self._checkpoint_every = checkpoint_every
        self.dsn = dsn
        self.lease = float(lease)
        self.owner = owner if owner is not None else default_owner()
        self._clock: Clock = clock if clock is not None else wall_clock_ms
        self._window = window
        self._soft = soft_limit
        self._hard = hard_limit
        self._reaper = reap_orphans
        self._life = SessionNursery("PostgresStore", "async with PostgresStore(dsn) as store")

    async def _prepare(self) -> None:
        await self._run(self._schema_blocking)  # the tables, before any session is handed out

    # -- database plumbing ----------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT)

    async def _run(self, fn: Callable[[psycopg.Cursor[Any]], _T]) -> _T:
        """``fn(cursor)`` in one transaction on a short-lived connection, in a worker thread.

        A database that cannot be reached, or that fails the statement, is one-line
        :class:`StoreError` naming the failure (never a traceback, never the DSN's password).
        """

        def blocking() -> _T:
            try:
                with self._connect() as conn, conn.transaction(), conn.cursor() as cur:
                    return fn(cur)
            except psycopg.Error as exc:
                raise StoreError(str(_unavailable(exc))) from exc

        return await trio.to_thread.run_sync(blocking)

    @staticmethod
    def _schema_blocking(cur: psycopg.Cursor[Any]) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        cur.execute(SCHEMA)

    def _where(self, session_id: str) -> str:
        return f"postgres:{session_id}"

    # -- create / open --------------------------------------------------------------------------

    async def create(self, session_id: str) -> Session:
        """A new live session: its header row is committed with this store's lease."""
        check_id(session_id)  # the same id rules as JsonlStore (spec/persistence.md §1)
        nursery = self._require_open()
        if (self.dsn, session_id) in _LIVE:
            raise SessionExists(session_id)
        header = Header(id=session_id, created_at=self._clock())
        line = encode_header(header)[:-1]
        conn = _Conn(self.dsn)

        def blocking() -> int:
            try:
                with conn.transaction() as cur:
                    cur.execute(
                        "INSERT INTO trio_agent_session (session_id, header, owner, token, expires)"
                        " VALUES (%s, %s, %s, 1, clock_timestamp() + make_interval(secs => %s))"
                        " ON CONFLICT (session_id) DO NOTHING RETURNING token",
                        (session_id, line, self.owner, self.lease),
                    )
                    row = cur.fetchone()
            except OSError as exc:
                raise StoreError(f"session {session_id!r}: create failed ({exc})") from exc
            if row is None:
                raise SessionExists(session_id)
            return int(row[0])

        try:
            token = await trio.to_thread.run_sync(blocking)
        except BaseException:
            conn.close_now()
            raise
        return await self._go_live(nursery, session_id, conn, token, None, line + b"\n", 0)

    async def open(self, session_id: str) -> Session:
        """Take the lease over (if it is free or expired), repair, return the session live.

        Exactly one of several racing openers wins the lease; the others get
        :class:`SessionLocked` (a :class:`~trio_agent.store.LeaseHeld` naming the owner and
        expiry). Only the winner repairs, in one transaction fenced by its new token.
        """
        check_id(session_id)  # the same id rules as JsonlStore (spec/persistence.md §1)
        nursery = self._require_open()
        if (self.dsn, session_id) in _LIVE:
            raise SessionLocked(session_id, os.getpid(), here=True)
        conn = _Conn(self.dsn)
        try:
            token = await trio.to_thread.run_sync(self._take_lease, conn, session_id)
            scan = await trio.to_thread.run_sync(self._read_scan, conn, session_id)
            kept = len(scan.events)

            async def append(closers: list[Event]) -> int:
                await trio.to_thread.run_sync(
                    self._write_closers, conn, session_id, token, kept, closers
                )
                return kept + len(closers)

            cold = await complete(scan, reaper=self._reaper, length=kept, append=append)
        except BaseException:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(conn.close_now)
            raise
        # The log's length as a file would hold it: what checkpoint offsets count in.
        length = scan.keep + sum(len(encode_event(e)) for e in cold.closers)
        return await self._go_live(nursery, session_id, conn, token, cold, cold.header_line, length)

    def _take_lease(self, conn: _Conn, session_id: str) -> int:
        """The atomic takeover: one ``UPDATE`` whose condition is "free or expired".

        Concurrent openers queue on the row lock; under READ COMMITTED each loser re-checks
        the condition against the winner's committed row, finds a current lease and updates
        nothing. The token grows by one on every takeover.
        """
        try:
            with conn.transaction() as cur:
                cur.execute(
                    "UPDATE trio_agent_session SET owner = %s, token = token + 1, "
                    "expires = clock_timestamp() + make_interval(secs => %s) "
                    "WHERE session_id = %s AND (expires IS NULL OR expires <= clock_timestamp()) "
                    "RETURNING token",
                    (self.owner, self.lease, session_id),
                )
                row = cur.fetchone()
                if row is not None:
                    return int(row[0])
                cur.execute(
                    "SELECT owner, expires FROM trio_agent_session WHERE session_id = %s",
                    (session_id,),
                )
                held = cur.fetchone()
        except OSError as exc:
            raise StoreError(f"session {session_id!r}: open failed ({exc})") from exc
        if held is None:
            raise SessionNotFound(session_id)
        raise LeaseHeld(session_id, held[0], _fmt_time(held[1]))

    def _read_scan(self, conn: _Conn, session_id: str) -> ColdScan:
        """Read the session for a cold open: every row, checked from its checkpoint on when
        one holds (spec/persistence.md §10.1), else all of them."""
        where = self._where(session_id)
        found = None
        try:
            with conn.transaction() as cur:
                if self._checkpoint_every is not None:
                    found = _find_checkpoint(cur, session_id)
                data = _read_log(cur, session_id, where)
        except OSError as exc:
            raise StoreError(f"session {session_id!r}: read failed ({exc})") from exc
        if data is None:
            raise SessionNotFound(session_id)
        if found is not None and found.checkpoint is not None:
            return _resume_rows(data, where, session_id, found.checkpoint)
        scan = _scan_rows(data, where, session_id)
        if found is None:
            return scan
        if found.reason != ck.MISSING:
            _log.warning(
                "%s: checkpoint not used (%s: %s); every row was read",
                where,
                found.reason,
                found.detail,
            )
        return attrs.evolve(scan, checkpoint=found.reason)

    def _write_closers(
        self, conn: _Conn, session_id: str, token: int, keep: int, closers: list[Event]
    ) -> None:
        """One fenced transaction: drop rows past the valid prefix, insert the closers."""
        lines = [encode_event(e)[:-1] for e in closers]
        try:
            with conn.transaction() as cur:
                _fence(cur, session_id, token)
                cur.execute(
                    "DELETE FROM trio_agent_event WHERE session_id = %s AND seq >= %s",
                    (session_id, keep),
                )
                cur.execute(
                    "INSERT INTO trio_agent_event (session_id, seq, line) "
                    "SELECT %s, s, l FROM unnest(%s::bigint[], %s::bytea[]) AS t(s, l)",
                    (session_id, list(range(keep, keep + len(lines))), lines),
                )
        except _Fenced as exc:
            raise exc.error from None
        except OSError as exc:
            raise WriteFailed(session_id, exc, len(closers), repairing=True) from exc

    async def _go_live(
        self,
        nursery: trio.Nursery,
        session_id: str,
        conn: _Conn,
        token: int,
        cold: ColdOpen | None,
        header_line: bytes,
        length: int,
    ) -> Session:
        key = (self.dsn, session_id)
        session: Session | None = None
        renew_scope = trio.CancelScope()

        def on_close() -> None:
            renew_scope.cancel()
            if _LIVE.get(key) is session:
                del _LIVE[key]
            self._life.sessions.discard(session)

        writer = PgWriter(
            session_id,
            conn,
            token,
            0 if cold is None else cold.length,
            window=self._window,
            soft_limit=self._soft,
            hard_limit=self._hard,
            on_close=on_close,
            length=length or len(header_line),
            # Rows have no identity beyond their session's: seq and digests tell (file_id).
            checkpoints=checkpoint_target(
                self._checkpoint_every,
                self._where(session_id),
                header_line,
                None,
                None if cold is None else cold.resumed_at,
            ),
        )
        session = self._life.seeded(session_id, writer, self._clock, cold)
        if cold is not None:
            writer.opened(cold.checker, cold.events)
        _LIVE[key] = session
        try:
            await self._life.start_writer(nursery, session, writer.run)
        except BaseException:
            on_close()
            conn.close_now()
            raise
        nursery.start_soon(self._renew_loop, writer, renew_scope)
        return session

    async def _renew_loop(self, writer: PgWriter, scope: trio.CancelScope) -> None:
        """Renew the lease every ``lease / 3`` seconds until the session closes or is fenced.

        A failed renewal (database unreachable) is logged and tried again at the next tick;
        the lease survives up to two missed renewals.
        """
        interval = self.lease / RENEWALS_PER_LEASE
        with scope:
            while writer.fenced is None:
                await trio.sleep(interval)
                try:
                    await trio.to_thread.run_sync(writer.renew_blocking, self.lease)
                except _Retired:  # the session closed while this renewal waited for its thread
                    return
                except _Fenced as exc:
                    writer.fence(exc.error)
                except OSError as exc:
                    _log.warning("session %r: lease renewal failed (%s)", writer._id, exc)

    # -- read-only ------------------------------------------------------------------------------

    def live(self, session_id: str) -> Session | None:
        """The session if it is live in this process (through any store on this DSN)."""
        check_id(session_id)  # the same id rules as JsonlStore (spec/persistence.md §1)
        return _LIVE.get((self.dsn, session_id))

    async def _read_cold(self, session_id: str) -> tuple[ColdScan, bool]:
        where = self._where(session_id)

        def fn(cur: psycopg.Cursor[Any]) -> tuple[bytes | None, bool]:
            cur.execute(
                "SELECT expires IS NOT NULL AND expires > clock_timestamp() "
                "FROM trio_agent_session WHERE session_id = %s",
                (session_id,),
            )
            row = cur.fetchone()
            if row is None:
                return None, False
            return _read_log(cur, session_id, where), bool(row[0])

        data, live = await self._run(fn)
        if data is None:
            raise SessionNotFound(session_id)
        return _scan_rows(data, where, session_id), live

    async def inspect(self, session_id: str) -> list[Event]:
        """As ``JsonlStore.inspect``: live (a current lease) as is, cold with closers in memory."""
        check_id(session_id)  # the same id rules as JsonlStore (spec/persistence.md §1)
        live = self.live(session_id)
        if live is not None:
            await trio.lowlevel.checkpoint()
            return list(live.events)
        scan, live_elsewhere = await self._read_cold(session_id)
        return scan.snapshot(session_id, live_elsewhere, balanced=False)

    async def load(self, session_id: str) -> list[Event]:
        """As ``JsonlStore.load``: a balanced snapshot or :class:`LiveTurnOpen`."""
        check_id(session_id)  # the same id rules as JsonlStore (spec/persistence.md §1)
        live = self.live(session_id)
        if live is not None:
            await live.flush()
            if live.open_turn is not None:
                raise LiveTurnOpen(session_id, live.open_turn)
            return list(live.events)
        scan, live_elsewhere = await self._read_cold(session_id)
        return scan.snapshot(session_id, live_elsewhere, balanced=True)

    async def session_ids(self) -> list[str]:
        """Ids of the stored sessions, sorted (by code point, as ``JsonlStore.session_ids``)."""

        def fn(cur: psycopg.Cursor[Any]) -> list[str]:
            cur.execute("SELECT session_id, header FROM trio_agent_session")
            ids = []
            for sid, header in cur.fetchall():
                with contextlib.suppress(HeaderError):
                    if decode_header(bytes(header)).id == sid:
                        ids.append(str(sid))
            return ids

        return sorted(await self._run(fn))

    async def read_log(self, session_id: str) -> StoredLog:
        """The session's rows as the bytes of its JSONL log, and whether it is live, in one
        transaction (read-only: nothing is repaired). :class:`SessionNotFound` if not stored;
        a gap in the seqs is :class:`SessionCorrupt`."""
        check_id(session_id)  # the same id rules as JsonlStore (spec/persistence.md §1)
        where = self._where(session_id)

        def fn(cur: psycopg.Cursor[Any]) -> StoredLog | None:
            cur.execute(
                "SELECT owner, expires, expires IS NOT NULL AND expires > clock_timestamp() "
                "FROM trio_agent_session WHERE session_id = %s",
                (session_id,),
            )
            row = cur.fetchone()
            data = None if row is None else _read_log(cur, session_id, where)
            if row is None or data is None:
                return None
            if not row[2]:
                return StoredLog(data, False)
            return StoredLog(data, True, row[0], _fmt_time(row[1]))

        stored = await self._run(fn)
        if stored is None:
            raise SessionNotFound(session_id)
        return stored

    async def lease_of(self, session_id: str) -> tuple[str | None, int, bool] | None:
        """``(owner, token, current)`` of a session's lease, or ``None`` if it is not stored."""
        check_id(session_id)  # the same id rules as JsonlStore (spec/persistence.md §1)

        def fn(cur: psycopg.Cursor[Any]) -> tuple[str | None, int, bool] | None:
            cur.execute(
                "SELECT owner, token, expires IS NOT NULL AND expires > clock_timestamp() "
                "FROM trio_agent_session WHERE session_id = %s",
                (session_id,),
            )
            row = cur.fetchone()
            return None if row is None else (row[0], int(row[1]), bool(row[2]))

        return await self._run(fn)


def _read_log(cur: psycopg.Cursor[Any], session_id: str, where: str) -> bytes | None:
    """The session as the bytes of a JSONL log (header line, then every event line)."""
    cur.execute("SELECT header FROM trio_agent_session WHERE session_id = %s", (session_id,))
    row = cur.fetchone()
    if row is None:
        return None
    parts = [bytes(row[0]), b"\n"]
    cur.execute(
        "SELECT seq, line FROM trio_agent_event WHERE session_id = %s ORDER BY seq", (session_id,)
    )
    for i, (seq, line) in enumerate(cur):
        if seq != i:  # a gap: rows were deleted behind the store's back
            raise SessionCorrupt(where, None, i, None, f"row seq {seq} follows seq {i - 1}")
        parts.append(bytes(line))
        parts.append(b"\n")
    return b"".join(parts)


def _scan_rows(data: bytes, where: str, session_id: str) -> ColdScan:
    """Classify the rows exactly as a log file (spec/recovery.md §Torn tail and corruption).

    Rows are whole transactions, so a torn line cannot happen; bad rows after the last
    committed ``turn/end`` are a dropped tail (deleted by the winner's repair), bad rows at
    or before it are :class:`SessionCorrupt` and nothing is changed.
    """
    return cold_scan(data, where, session_id)


@attrs.frozen
class _Found:
    """What looking for a session's checkpoint row found (spec/persistence.md §10.1)."""

    checkpoint: ck.Checkpoint | None
    reason: str
    detail: str = ""


def _find_checkpoint(cur: psycopg.Cursor[Any], session_id: str) -> _Found:
    """The session's checkpoint, verified against its header row and the row it ends at; a
    missing row there (rows deleted) is ``truncated``, another line there ``mismatched``."""
    cur.execute("SELECT body, seq FROM trio_agent_checkpoint WHERE session_id = %s", (session_id,))
    row = cur.fetchone()
    if row is None:
        return _Found(None, ck.MISSING)
    cur.execute("SELECT header FROM trio_agent_session WHERE session_id = %s", (session_id,))
    header = cur.fetchone()
    if header is None:
        return _Found(None, ck.MISSING)
    header_line = bytes(header[0]) + b"\n"
    try:
        cp = ck.decode(bytes(row[0]))
        if cp.seq != row[1]:
            raise ck.CheckpointRefused(ck.TORN, f"row seq {row[1]}, checkpoint seq {cp.seq}")
        last_line = header_line
        if cp.seq > 0:
            cur.execute(
                "SELECT line FROM trio_agent_event WHERE session_id = %s AND seq = %s",
                (session_id, cp.seq - 1),
            )
            at = cur.fetchone()
            last_line = b"" if at is None else bytes(at[0]) + b"\n"
        ck.verify(
            cp,
            size=cp.offset if last_line else -1,
            header_line=header_line,
            last_line=last_line,
            file_id=None,
        )
    except ck.CheckpointRefused as refused:
        return _Found(None, refused.reason, refused.detail)
    return _Found(cp, "used")


def _resume_rows(data: bytes, where: str, session_id: str, cp: ck.Checkpoint) -> ColdScan:
    """A cold scan of the rows (as :func:`_read_log` joined them) from the verified
    checkpoint ``cp``: the rows before it are held unchecked (a session's events are in
    memory, so reading one never waits for the database), the rows from it on are checked
    as a file's tail."""
    lines = lines_of(data)
    resume = Resume(next(lines), ck.restore(cp), cp.offset)
    prefix = list(itertools.islice(lines, cp.seq))
    scan = cold_scan_lines(lines, where, session_id, resume=resume, prefix=prefix)
    _log.info("%s: resumed from the checkpoint at seq %d", where, cp.seq)
    return attrs.evolve(scan, checkpoint="used", resumed_at=cp.offset)
