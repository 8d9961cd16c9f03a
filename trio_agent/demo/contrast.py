"""The truncate contrast: what truncation would drop next to what completion appends. Pure.

The truncate scenario reads the crashed session file and asks the store what a cold open
would show (:meth:`~trio_agent.store.JsonlStore.inspect`, read-only); :func:`truncation_contrast`
turns those into the contrast both front ends show: the truncate report of the pure core, the
closers completion would append instead, and proof that the file did not change meanwhile.
:func:`mark_would_drop` marks the log rows truncation would drop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ..log import Event, repair_closers, scan_log, truncate_open_turn
from .log_tail import log_item

__all__ = ["ClosersDisagree", "mark_would_drop", "truncation_contrast"]


class ClosersDisagree(Exception):
    """The store's cold view and the pure core name different closers."""


def truncation_contrast(before: bytes, inspected: Sequence[Event], after: bytes) -> dict[str, Any]:
    """The contrast for a crashed log (see the module docstring).

    ``before`` is the file's bytes before the store was asked, ``inspected`` what the store's
    cold ``inspect`` returned (the valid prefix, then the closers), ``after`` the file's bytes
    afterwards. Raises :class:`ClosersDisagree` if the store's closers are not the ones the
    pure core computes.
    """
    scan = scan_log(before, strict=False)
    report = truncate_open_turn(scan.events)
    closers = inspected[len(scan.events) :]
    if [e.type for e in closers] != [e.type for e in repair_closers(scan.checker)]:
        raise ClosersDisagree("store.inspect and the pure core disagree about the closers")
    return {
        "truncate": report.to_json(),
        "droppedSeqs": [e.seq for e in report.dropped],
        "spawned": [
            {"pgid": e.data["pgid"], "callId": e.data["callId"]}
            for e in report.dropped
            if e.type == "tool/spawned"
        ],
        "complete": {
            "keptEvents": len(scan.events),
            "deletedEvents": 0,
            "closers": [log_item(e, 0, "would-append") for e in closers],
        },
        "file": {
            "bytes": len(after),
            "sha256": hashlib.sha256(after).hexdigest()[:16],
            "unchanged": before == after,
        },
    }


def mark_would_drop(items: Sequence[dict[str, Any]], contrast: dict[str, Any]) -> None:
    """Mark the log rows (:func:`~trio_agent.demo.log_tail.log_items`) truncation would drop."""
    dropped = set(contrast["droppedSeqs"])
    for item in items:
        if item["seq"] in dropped:
            item["would"] = "drop"
