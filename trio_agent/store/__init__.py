"""Durable sessions: the JSONL backend, write-behind batching, liveness locks and cold repair.

See spec/persistence.md. :class:`Session` is the in-memory log every layer above appends to;
:class:`JsonlStore` binds sessions to files and hands out new, or cold-opened (repaired),
live sessions; :func:`repair_file` is the same cold-open repair on one file path.
"""

from .errors import (
    CreateFailed,
    LiveTurnOpen,
    NotALogFile,
    PendingLimitExceeded,
    ReentrantAppend,
    SessionClosed,
    SessionCorrupt,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StoreError,
    UnsupportedFormat,
    WriteFailed,
)
from .fileops import FileOps
from .ids import escape_id
from .jsonl import LOG_NAME, PID_NAME, JsonlStore, repair_file
from .recovery import (
    DEFAULT_REAPER,
    Orphan,
    Reaper,
    RepairReport,
    reap_orphans_with_procgroup,
)
from .session import Clock, Observer, Session, Sink, wall_clock_ms
from .writer import ALWAYS_ADMITTED, DEFAULT_HARD_LIMIT, DEFAULT_SOFT_LIMIT, DEFAULT_WINDOW

__all__ = [
    "ALWAYS_ADMITTED",
    "DEFAULT_HARD_LIMIT",
    "DEFAULT_REAPER",
    "DEFAULT_SOFT_LIMIT",
    "DEFAULT_WINDOW",
    "LOG_NAME",
    "PID_NAME",
    "Clock",
    "CreateFailed",
    "FileOps",
    "JsonlStore",
    "LiveTurnOpen",
    "NotALogFile",
    "Observer",
    "Orphan",
    "PendingLimitExceeded",
    "Reaper",
    "ReentrantAppend",
    "RepairReport",
    "Session",
    "SessionClosed",
    "SessionCorrupt",
    "SessionExists",
    "SessionLocked",
    "SessionNotFound",
    "Sink",
    "StoreError",
    "UnsupportedFormat",
    "WriteFailed",
    "escape_id",
    "reap_orphans_with_procgroup",
    "repair_file",
    "wall_clock_ms",
]
