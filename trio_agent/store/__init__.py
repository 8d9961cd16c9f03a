"""Durable sessions: the JSONL backend, write-behind batching, liveness locks and cold repair.

See spec/persistence.md. :class:`Session` is the in-memory log every layer above appends to;
:class:`JsonlStore` binds sessions to files and hands out new, or cold-opened (repaired),
live sessions; :func:`repair_file` is the same cold-open repair on one file path. A cold open
looks for what a crashed turn's tool calls left running with :func:`trio_agent.procs.reap_orphans`
unless its opener passes another reaper (:data:`Reaper`) or ``None``.
"""

from typing import TYPE_CHECKING

from ..log.repair import Orphan, Reaping
from .contract import Store
from .errors import (
    CreateFailed,
    LeaseHeld,
    LiveTurnOpen,
    NotALogFile,
    PendingLimitExceeded,
    ReentrantAppend,
    SessionClosed,
    SessionCorrupt,
    SessionExists,
    SessionFenced,
    SessionLocked,
    SessionNotFound,
    StoreError,
    UnsupportedFormat,
    WriteFailed,
)
from .fileops import FileOps
from .ids import escape_id
from .jsonl import LOG_NAME, PID_NAME, JsonlStore, repair_file
from .recovery import Reaper, RepairReport
from .session import Clock, Observer, Session, Sink, wall_clock_ms
from .writer import ALWAYS_ADMITTED, DEFAULT_HARD_LIMIT, DEFAULT_SOFT_LIMIT, DEFAULT_WINDOW

if TYPE_CHECKING:
    from .postgres import PostgresStore

__all__ = [
    "ALWAYS_ADMITTED",
    "DEFAULT_HARD_LIMIT",
    "DEFAULT_SOFT_LIMIT",
    "DEFAULT_WINDOW",
    "LOG_NAME",
    "PID_NAME",
    "Clock",
    "CreateFailed",
    "FileOps",
    "JsonlStore",
    "LeaseHeld",
    "LiveTurnOpen",
    "NotALogFile",
    "Observer",
    "Orphan",
    "PendingLimitExceeded",
    "PostgresStore",
    "Reaper",
    "Reaping",
    "ReentrantAppend",
    "RepairReport",
    "Session",
    "SessionClosed",
    "SessionCorrupt",
    "SessionExists",
    "SessionFenced",
    "SessionLocked",
    "SessionNotFound",
    "Sink",
    "Store",
    "StoreError",
    "UnsupportedFormat",
    "WriteFailed",
    "escape_id",
    "repair_file",
    "wall_clock_ms",
]


def __getattr__(name: str) -> object:
    # PostgresStore imports psycopg: only when it is asked for, so the file store and the file
    # commands never load the database driver.
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
