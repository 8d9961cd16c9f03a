"""Errors raised by :mod:`trio_agent.store`. Every message is one line naming the session.

An append that breaks a log rule is not a store error: it raises the log core's
:class:`~trio_agent.log.errors.LogViolation` (rule, seq, message) and records nothing.
"""

from __future__ import annotations

import os


class StoreError(Exception):
    """Base class of every error raised by :mod:`trio_agent.store`."""


class SessionNotFound(StoreError, LookupError):
    """No stored session has this id (or the file does not exist)."""

    def __init__(self, session_id: str, path: str | os.PathLike[str] | None = None) -> None:
        where = f" (no {os.fspath(path)})" if path is not None else ""
        super().__init__(f"session {session_id!r} not found{where}")
        self.session_id = session_id
        self.path = path


class SessionExists(StoreError):
    """``create`` was given an id that is already stored or live."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists; use open() to continue it")
        self.session_id = session_id


class SessionLocked(StoreError):
    """The session is live: held by a writer in this process or in another one."""

    def __init__(self, session_id: str, pid: int | None, *, here: bool = False) -> None:
        if here:
            holder = "by this process"
        elif pid is not None:
            holder = f"by process {pid}"
        else:
            holder = "by another process"
        super().__init__(
            f"session {session_id!r} is live (locked {holder}); "
            "it cannot be opened or repaired until that writer closes or dies"
        )
        self.session_id = session_id
        self.pid = pid
        self.here = here


class SessionCorrupt(StoreError):
    """Damage inside committed data (at or before the last ``turn/end``): nothing was modified."""

    def __init__(
        self,
        path: str,
        line: int | None,
        seq: int | None,
        rule: str | None,
        message: str,
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        at = "" if seq is None else f" seq {seq}:"
        tag = f" {rule}:" if rule else ""
        super().__init__(
            f"{where}:{at} corrupt:{tag} {message} "
            "(committed data is damaged; the file was not modified)"
        )
        self.path = path
        self.line = line
        self.seq = seq
        self.rule = rule
        self.message = message


class UnsupportedFormat(StoreError):
    """The header is missing, not ours, or written by another format version."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class LiveTurnOpen(StoreError):
    """A snapshot of a live session was asked for while one of its turns is open."""

    def __init__(self, session_id: str, turn: int) -> None:
        super().__init__(
            f"session {session_id!r} is live and turn {turn} is open; "
            "a snapshot is available once the turn ends (live sessions are never repaired)"
        )
        self.session_id = session_id
        self.turn = turn


class SessionClosed(StoreError):
    """``append`` or ``flush`` on a session after :meth:`Session.aclose`."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} is closed")
        self.session_id = session_id


class ReentrantAppend(StoreError):
    """An observer called ``append`` while being notified of another append."""

    def __init__(self, session_id: str, type_: str, during: int) -> None:
        super().__init__(
            f"session {session_id!r}: append({type_!r}) from an observer of seq {during} is "
            "refused; observers must not append (schedule the append from a task instead)"
        )
        self.session_id = session_id
        self.type = type_
        self.during = during


class PendingLimitExceeded(StoreError):
    """The hard bound on events not yet durable was hit; only closing events are admitted."""

    def __init__(self, session_id: str, type_: str, pending_bytes: int, limit: int) -> None:
        super().__init__(
            f"session {session_id!r}: append({type_!r}) refused: {pending_bytes} bytes are "
            f"waiting for the disk (hard limit {limit}); only closing events are admitted"
        )
        self.session_id = session_id
        self.type = type_
        self.pending_bytes = pending_bytes
        self.limit = limit


class NotALogFile(StoreError):
    """The path where a session's log (or its directory) belongs is something the store
    never writes through: a symbolic link, a directory, a FIFO, a device (spec/persistence.md
    §1). Nothing was changed."""

    def __init__(self, path: str | os.PathLike[str], message: str) -> None:
        # ``message`` is trio_agent.files' one wording of the refusal, which names ``path``.
        super().__init__(message)
        self.path = os.fspath(path)


class CreateFailed(StoreError, OSError):
    """``create`` could not write the new log durably (``ENOSPC``, ``EIO``, ``EACCES``...).
    Nothing is left behind: no log, no temporary file, no directory the call created."""

    def __init__(
        self,
        session_id: str,
        path: str | os.PathLike[str],
        cause: OSError,
        *,
        published: bool = False,
    ) -> None:
        left = (
            "the log exists, but its directory entry may not survive a power loss"
            if published
            else "nothing was created"
        )
        OSError.__init__(
            self,
            cause.errno,
            f"session {session_id!r}: cannot create its log at {os.fspath(path)} "
            f"({cause.strerror or cause}); {left}",
        )
        self.session_id = session_id

    def __str__(self) -> str:
        return str(self.strerror)


class WriteFailed(StoreError, OSError):
    """A batch could not be written or synced; its events stay queued and will be retried.

    It is an :class:`OSError` too, carrying the ``errno`` of the failure (``__cause__`` is the
    original exception).
    """

    def __init__(
        self, session_id: str, cause: OSError, queued: int, *, closing: bool = False
    ) -> None:
        # While the session stays open the events are retried; the close's final flush is
        # the last attempt, so then they are lost (the file stays a valid prefix).
        fate = (
            "could not be written and are lost (the session is closed; its log is a valid "
            "prefix, which the next open repairs)"
            if closing
            else "stay queued and will be retried"
        )
        OSError.__init__(
            self,
            cause.errno,
            f"session {session_id!r}: write failed ({cause.strerror or cause}); "
            f"{queued} event(s) {fate}",
        )
        self.session_id = session_id
        self.queued = queued
        self.closing = closing

    def __str__(self) -> str:
        return str(self.strerror)


class LeaseHeld(SessionLocked):
    """A database session is live: another writer holds a current lease on it.

    A :class:`SessionLocked` (so callers need no new ``except``) that names the lease's
    owner and when it expires (spec/persistence.md §10).
    """

    def __init__(self, session_id: str, owner: str | None, expires: str | None) -> None:
        StoreError.__init__(
            self,
            f"session {session_id!r} is live (leased by {owner or 'an unknown owner'} until "
            f"{expires or 'an unknown time'}); it cannot be opened or repaired until that "
            "writer closes or its lease expires",
        )
        self.session_id = session_id
        self.pid = None
        self.here = False
        self.owner = owner
        self.expires = expires


class SessionFenced(StoreError):
    """This writer lost its lease: another owner took the session over; nothing more is written.

    Raised by ``flush`` (and ``wait_writable``, ``aclose``) of a database session whose lease
    token is no longer the current one (spec/persistence.md §10).
    """

    def __init__(self, session_id: str, owner: str | None, token: int | None) -> None:
        by = owner or "another owner"
        at = "" if token is None else f" (lease token {token})"
        super().__init__(
            f"session {session_id!r}: this writer's lease was taken over by {by}{at}; "
            "nothing more is written by this writer"
        )
        self.session_id = session_id
        self.owner = owner
        self.token = token
