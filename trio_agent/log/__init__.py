"""The pure core: log format v1, its invariants, repair, truncation and the consumed-work fold.

No trio and no I/O here (spec/README.md): bytes and events in, verdicts and closers out. The
CLI runs this code on files; a live session runs the same :class:`LogChecker` on every append.
"""

from typing import TYPE_CHECKING, Any

from .checker import LogChecker, check_events
from .codec import (
    SplitLog,
    decode_event,
    decode_header,
    encode_event,
    encode_header,
    event_from_json,
    event_to_json,
    split_log,
)
from .consumed import FOLD_TYPES, ConsumedFold, ConsumedWork, fold_consumed_work
from .envelope import FORMAT_VERSION, STEP_SCOPED, Event, Header
from .errors import HeaderError, LogError, LogViolation, UnreadableLineError
from .inbox import InboxProjection, SpliceError
from .repair import (
    NOT_STARTED_TEXT,
    OTHER_HOST_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    REAP_KINDS,
    REAPED_TEXTS,
    Orphan,
    Reaping,
    ReapKind,
    repair_closers,
    spawn_boot_id,
)
from .rules import RULES
from .scan import LineScan, Scan, TornTail, lines_of, scan_lines, scan_log
from .splice import Splice, SpliceKind, classify_splice, splice_kind
from .truncate import TruncateFold, TruncateReport, truncate_open_turn

if TYPE_CHECKING:
    from .events import DATA_CLASSES

__all__ = [
    "DATA_CLASSES",
    "FOLD_TYPES",
    "FORMAT_VERSION",
    "NOT_STARTED_TEXT",
    "OTHER_HOST_TEXT",
    "OUTCOME_UNKNOWN_TEXT",
    "REAPED_TEXTS",
    "REAP_KINDS",
    "RULES",
    "STEP_SCOPED",
    "ConsumedFold",
    "ConsumedWork",
    "Event",
    "Header",
    "HeaderError",
    "InboxProjection",
    "LineScan",
    "LogChecker",
    "LogError",
    "LogViolation",
    "Orphan",
    "ReapKind",
    "Reaping",
    "Scan",
    "Splice",
    "SpliceError",
    "SpliceKind",
    "SplitLog",
    "TornTail",
    "TruncateFold",
    "TruncateReport",
    "UnreadableLineError",
    "check_events",
    "classify_splice",
    "decode_event",
    "decode_header",
    "encode_event",
    "encode_header",
    "event_from_json",
    "event_to_json",
    "fold_consumed_work",
    "lines_of",
    "repair_closers",
    "scan_lines",
    "scan_log",
    "spawn_boot_id",
    "splice_kind",
    "split_log",
    "truncate_open_turn",
]


def __getattr__(name: str) -> Any:
    """``DATA_CLASSES`` (from :mod:`.events`) on first use: the data classes cost more
    start-up than checking a short log, and reading a log does not need them."""
    if name == "DATA_CLASSES":
        from .events import DATA_CLASSES

        return DATA_CLASSES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
