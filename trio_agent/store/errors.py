"""Errors raised by :mod:`trio_agent.store`. Every message is one line naming the session.

Each error is an attrs class (``auto_exc``): its fields are what a caller may inspect
(``session_id``, ``path``, ``pid``...), and its ``__str__`` words the one line from them, so
the wording lives beside the data it is made of (spec/persistence.md §8 lists them).

An append that breaks a log rule is not a store error: it raises the log core's
:class:`~trio_agent.log.errors.LogViolation` (rule, seq, message) and records nothing.
"""

from __future__ import annotations

import os

import attrs


class StoreError(Exception):
    """Base class of every error raised by :mod:`trio_agent.store`."""


@attrs.define(auto_exc=True, slots=False)
class SessionNotFound(StoreError, LookupError):
    """No stored session has this id (or the file does not exist)."""

    session_id: str
    path: str | os.PathLike[str] | None = None

    def __str__(self) -> str:
        where = f" (no {os.fspath(self.path)})" if self.path is not None else ""
        return f"session {self.session_id!r} not found{where}"


@attrs.define(auto_exc=True, slots=False)
class SessionExists(StoreError):
    """``create`` was given an id that is already stored or live."""

    session_id: str

    def __str__(self) -> str:
        return f"session {self.session_id!r} already exists; use open() to continue it"


@attrs.define(auto_exc=True, slots=False)
class SessionLocked(StoreError):
    """The session is live: held by a writer in this process or in another one."""

    session_id: str
    pid: int | None
    here: bool = attrs.field(default=False, kw_only=True)

    def _holder(self) -> str:
        if self.here:
            return "locked by this process"
        if self.pid is not None:
            return f"locked by process {self.pid}"
        return "locked by another process"

    def __str__(self) -> str:
        return (
            f"session {self.session_id!r} is live ({self._holder()}); "
            "it cannot be opened or repaired until that writer closes or dies"
        )


@attrs.define(auto_exc=True, slots=False)
class SessionCorrupt(StoreError):
    """Damage inside committed data (at or before the last ``turn/end``): nothing was modified."""

    path: str
    line: int | None
    seq: int | None
    rule: str | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        at = "" if self.seq is None else f" seq {self.seq}:"
        tag = f" {self.rule}:" if self.rule else ""
        return (
            f"{where}:{at} corrupt:{tag} {self.message} "
            "(committed data is damaged; the file was not modified)"
        )


@attrs.define(auto_exc=True, slots=False)
class PrefixChanged(StoreError):
    """The part of a log a cold open resumed past (its checkpoint's prefix, spec/persistence.md
    §5.1) no longer reads as it did: the file was cut or rewritten under the session."""

    path: str
    message: str

    def __str__(self) -> str:
        return (
            f"{self.path}: {self.message} (the log changed on disk after the session was "
            "opened from its checkpoint; reopen it)"
        )


@attrs.define(auto_exc=True, slots=False)
class UnsupportedFormat(StoreError):
    """The header is missing, not ours, or written by another format version."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@attrs.define(auto_exc=True, slots=False)
class LiveTurnOpen(StoreError):
    """A snapshot of a live session was asked for while one of its turns is open."""

    session_id: str
    turn: int

    def __str__(self) -> str:
        return (
            f"session {self.session_id!r} is live and turn {self.turn} is open; "
            "a snapshot is available once the turn ends (live sessions are never repaired)"
        )


@attrs.define(auto_exc=True, slots=False)
class SessionClosed(StoreError):
    """``append`` or ``flush`` on a session after :meth:`Session.aclose`."""

    session_id: str

    def __str__(self) -> str:
        return f"session {self.session_id!r} is closed"


@attrs.define(auto_exc=True, slots=False)
class ReentrantAppend(StoreError):
    """An observer called ``append`` while being notified of another append."""

    session_id: str
    type: str = attrs.field(alias="type_")
    during: int

    def __str__(self) -> str:
        return (
            f"session {self.session_id!r}: append({self.type!r}) from an observer of seq "
            f"{self.during} is refused; observers must not append (schedule the append from a "
            "task instead)"
        )


@attrs.define(auto_exc=True, slots=False)
class PendingLimitExceeded(StoreError):
    """The hard bound on events not yet durable was hit; only closing events are admitted."""

    session_id: str
    type: str = attrs.field(alias="type_")
    pending_bytes: int
    limit: int

    def __str__(self) -> str:
        return (
            f"session {self.session_id!r}: append({self.type!r}) refused: {self.pending_bytes} "
            f"bytes are waiting for the disk (hard limit {self.limit}); only closing events are "
            "admitted"
        )


@attrs.define(auto_exc=True, slots=False)
class NotALogFile(StoreError):
    """The path where a session's log (or its directory) belongs is something the store
    never writes through: a symbolic link, a directory, a FIFO, a device (spec/persistence.md
    §1). Nothing was changed. ``message`` is :mod:`trio_agent.files`' one wording of the
    refusal, which names ``path``."""

    path: str = attrs.field(converter=str)
    message: str

    def __str__(self) -> str:
        return self.message


@attrs.define(auto_exc=True, slots=False)
class CreateFailed(StoreError, OSError):
    """``create`` could not write the new log durably (``ENOSPC``, ``EIO``, ``EACCES``...).
    Nothing is left behind: no log, no temporary file, no directory the call created.

    It is an :class:`OSError` too, carrying the ``errno`` of the failure."""

    session_id: str
    path: str | os.PathLike[str]
    cause: OSError
    published: bool = attrs.field(default=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        left = (
            "the log exists, but its directory entry may not survive a power loss"
            if self.published
            else "nothing was created"
        )
        OSError.__init__(
            self,
            self.cause.errno,
            f"session {self.session_id!r}: cannot create its log at {os.fspath(self.path)} "
            f"({self.cause.strerror or self.cause}); {left}",
        )

    def __str__(self) -> str:
        return str(self.strerror)


@attrs.define(auto_exc=True, slots=False)
class WriteFailed(StoreError, OSError):
    """A batch could not be written or synced. Its events stay queued and will be retried,
    but for a closing session's (they are lost) and a repair's closers (nothing queues them).

    It is an :class:`OSError` too, carrying the ``errno`` of the failure (``__cause__`` is the
    original exception).
    """

    session_id: str
    cause: OSError
    queued: int
    closing: bool = attrs.field(default=False, kw_only=True)
    #: The events are the closers a repair (a cold open's, or ``repair --write``'s) appends:
    #: nothing queues them, and the open or repair that wrote them has failed.
    repairing: bool = attrs.field(default=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        # While the session stays open the events are retried; the close's final flush is
        # the last attempt, so then they are lost (the file stays a valid prefix). A
        # repair's closers are not queued at all: its open (or repair) fails with them.
        if self.closing:
            fate = (
                "could not be written and are lost (the session is closed; its log is a "
                "valid prefix, which the next open repairs)"
            )
        elif self.repairing:
            fate = "its repair appends were not written"
        else:
            fate = "stay queued and will be retried"
        OSError.__init__(
            self,
            self.cause.errno,
            f"session {self.session_id!r}: write failed ({self.cause.strerror or self.cause}); "
            f"{self.queued} event(s) {fate}",
        )

    def __str__(self) -> str:
        return str(self.strerror)


@attrs.define(auto_exc=True, slots=False, init=False)
class LeaseHeld(SessionLocked):
    """A database session is live: another writer holds a current lease on it.

    A :class:`SessionLocked` (so callers need no new ``except``) that names the lease's
    owner and when it expires (spec/persistence.md §10); ``pid`` is ``None``, ``here`` false.
    """

    owner: str | None
    expires: str | None

    def __init__(self, session_id: str, owner: str | None, expires: str | None) -> None:
        self.__attrs_init__(session_id, None, owner, expires)

    def __str__(self) -> str:
        return (
            f"session {self.session_id!r} is live (leased by {self.owner or 'an unknown owner'} "
            f"until {self.expires or 'an unknown time'}); it cannot be opened or repaired until "
            "that writer closes or its lease expires"
        )


@attrs.define(auto_exc=True, slots=False)
class SessionFenced(StoreError):
    """This writer lost its lease: another owner took the session over; nothing more is written.

    Raised by ``flush`` (and ``wait_writable``, ``aclose``) of a database session whose lease
    token is no longer the current one (spec/persistence.md §10).
    """

    session_id: str
    owner: str | None
    token: int | None

    def __str__(self) -> str:
        by = self.owner or "another owner"
        at = "" if self.token is None else f" (lease token {self.token})"
        return (
            f"session {self.session_id!r}: this writer's lease was taken over by {by}{at}; "
            "nothing more is written by this writer"
        )
