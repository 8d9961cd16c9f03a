"""What a run shows, as the JSON-able snapshot both front ends draw. Pure, no trio, no I/O.

:class:`Findings` holds what a scenario's steps measured and marked on the run (the facts,
filed under the step that recorded them, where the log was cut, where recovery began, the
truncate contrast). :func:`run_snapshot` builds the run's part of the snapshot from the
events read back, the runtime view, the tool groups and the findings; the driver adds the
steps' part (:meth:`~trio_agent.demo.playback.Playback.to_json`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ..log import ConsumedWork, Event, SpliceKind, fold_consumed_work, splice_kind
from .contrast import mark_would_drop
from .log_tail import log_items, open_turn
from .runtime_view import RuntimeView

if TYPE_CHECKING:
    from .worker_process import Group

__all__ = ["Findings", "fold_why", "run_snapshot"]


@attrs.define
class Findings:
    """What a scenario's steps measured and marked (see the module docstring)."""

    #: The step running now: facts are filed under it.
    step: int | None = None
    #: For each step begun, how many log rows were durable when it began: rows after the
    #: previous step ended and before this one began came while the reader read (the
    #: terminal lists them under the step they belong to).
    step_began: list[int] = attrs.Factory(list)
    #: ``{"text", "tone", "step"}`` for each fact a step recorded, in order.
    facts: list[dict[str, Any]] = attrs.Factory(list)
    #: The last seq before ``kill -9`` of the worker.
    cut_after: int | None = None
    #: The number of events before the restarted worker's recovery appended any.
    recovered_from: int | None = None
    #: The truncate contrast (:func:`~trio_agent.demo.contrast.truncation_contrast`).
    contrast: dict[str, Any] | None = None
    #: The file's bytes when the contrast was made (to prove completion kept them).
    before_recovery: bytes | None = None

    def fact(self, text: str, tone: str = "ok") -> None:
        """Record something the running step measured."""
        self.facts.append({"text": text, "tone": tone, "step": self.step})


def fold_why(events: Sequence[Event], fold: ConsumedWork) -> str | None:
    """Why ``fold_consumed_work`` says what it says, in one sentence, once input was dropped
    (spec/consumed-work.md, rules C3 and C4): a drop before the accounting ``turn/end`` is part
    of that turn's story (``dropped_unrun`` false); one after it never ran (true)."""
    drops = [
        e.seq
        for e in events
        if e.type == "agent/inbox/spliced"
        and splice_kind(e.data) is SpliceKind.DROP
        and not e.data.get("inserted")  # a replacement is not a drop (C3)
    ]
    if not drops:
        return None
    end = fold.end_seq
    if fold.dropped_unrun:
        after = [seq for seq in drops if end is None or seq > end]
        where = (
            "no turn has accounted for its input yet"
            if end is None
            else (f"the last turn that accounted for its input ended at seq {end}")
        )
        return (
            f"the drop at seq {after[-1] if after else drops[-1]} came after everything that "
            f"accounts: {where}, so that message never ran (C3)"
        )
    before = [seq for seq in drops if end is not None and seq < end]
    if before:
        return (
            f"the drop at seq {before[-1]} came before turn/end seq {end}, which accounts for "
            "that turn's input: the drop is part of that turn's story, not input left unrun (C4)"
        )
    return None


def run_snapshot(
    *,
    log_path: str,
    events: Sequence[Event],
    runtime: RuntimeView,
    groups: Iterable[Group],
    progress: Sequence[str],
    findings: Findings,
) -> dict[str, Any]:
    """The run's part of the snapshot: the log pane, the runtime pane, the contrast, the facts.

    ``progress`` is the lines of the stand-in test suite's ``progress.log`` so far.
    """
    items = log_items(events, runtime.recovery_seqs)
    if findings.contrast is not None:
        mark_would_drop(items, findings.contrast)
    fold = fold_consumed_work(events)
    worker = runtime.worker
    worker_running = worker is not None and worker.state == "running"
    view = runtime.to_json()
    notes = view.pop("notes")
    return {
        "log": {
            "path": log_path,
            "items": items,
            "cutAfter": findings.cut_after,
            "recoveredFrom": findings.recovered_from,
            "stepBegan": list(findings.step_began),
            "openTurn": open_turn(events),
        },
        "runtime": {
            **view,
            "groups": [g.to_json(worker_running=worker_running) for g in groups],
            "progress": {"lines": len(progress), "last": progress[-1] if progress else None},
            "fold": {
                "endSeq": fold.end_seq,
                "droppedUnrun": fold.dropped_unrun,
                "why": fold_why(events, fold),
            },
            "notes": notes,
        },
        "contrast": findings.contrast,
        "facts": findings.facts,
    }
