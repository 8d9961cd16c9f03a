"""What a log checker keeps, as comparable values: for tests that hold a checker restored
from a checkpoint to one fed the whole log."""

from __future__ import annotations

from typing import Any

from trio_agent.log.checker import LogChecker

__all__ = ["checker_state"]


def checker_state(checker: LogChecker) -> tuple[Any, ...]:
    """Everything a checker keeps (spec/invariants.md §State a checker keeps)."""
    return (
        checker.next_seq,
        checker.last_turn,
        checker.last_time,
        checker.open_turn,
        checker.open_step,
        checker._last_step,
        # "phase" is of the open step only (spec/invariants.md); step/start sets it anew
        checker._phase if checker.open_step is not None else None,
        checker.unanswered_calls(),
        sorted(checker._call_ids),
        sorted(checker._approval_ids),
        dict(checker._open_approvals),
        checker._repairing,
        {t: list(q) for t, q in checker.inbox.queues.items()},
        sorted(checker.inbox._ids),
    )
