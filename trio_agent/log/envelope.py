"""Log format v1's lines as read and written: the header, and the envelope around each
event's ``data`` (spec/log.md §Header, §Envelope), with the format's numbers.

This is all that reading or writing a log needs of the format's description. The data of
each event type is described in :mod:`.events`, whose classes the hot path never loads: it
checks ``data`` with :mod:`.data_predicates`, generated from those classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

FORMAT_VERSION: Final = 1

#: The largest integer a defined integer field may hold (spec/log.md §Values): 2^53 - 1, the
#: largest every JSON reader holds exactly (JavaScript's ``Number.MAX_SAFE_INTEGER``).
MAX_INTEGER: Final = 2**53 - 1


@attrs.frozen(slots=True)
class Event:
    """One log line after the header: ``{"seq", "time", "type", "data"}`` (spec/log.md §Envelope).

    ``data`` is the decoded JSON object as written; treat it as read-only.
    """

    seq: int
    time: int
    type: str
    data: Mapping[str, Any]


@attrs.frozen(slots=True)
class Header:
    """The first line: ``{"type":"session","version":1,"id":...,"createdAt":<ms>}``."""

    id: str
    created_at: int
    version: int = FORMAT_VERSION


#: Events that belong to a step: they carry ``turn`` and ``step`` and need both open (rule I8).
STEP_SCOPED: Final = frozenset(
    {
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "approval/asked",
        "approval/decided",
        "tool/call",
        "tool/spawned",
        "tool/output",
        "tool/result",
    }
)
