"""The snapshot a run shows and the truncate contrast, built from a crashed log with no process.

The log is the spec vector of a crash with a dispatched call still running
(``spec/vectors/valid/open-step-dispatched-call.json``); the closers are the pure core's.
The recorded runtime views replay through :class:`RecordedView` to the same inputs and view.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trio_agent.demo.contrast import ClosersDisagree, mark_would_drop, truncation_contrast
from trio_agent.demo.log_tail import log_items
from trio_agent.demo.runtime_view import RecordedView, RuntimeView
from trio_agent.demo.snapshot import Findings, fold_why, run_snapshot
from trio_agent.demo.worker_process import Group
from trio_agent.log import fold_consumed_work, repair_closers, scan_log

REPO = Path(__file__).resolve().parents[2]
VECTOR = REPO / "spec" / "vectors" / "valid" / "open-step-dispatched-call.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "reports"


def crashed_log() -> bytes:
    lines: list[str] = json.loads(VECTOR.read_text(encoding="utf-8"))["log"]
    return "".join(line + "\n" for line in lines).encode()


def contrast_of(data: bytes) -> dict[str, Any]:
    events = scan_log(data, strict=True).events
    return truncation_contrast(data, [*events, *repair_closers(events)], data)


def test_the_contrast_drops_the_open_turn_and_completion_keeps_it() -> None:
    data = crashed_log()
    events = scan_log(data, strict=True).events
    contrast = contrast_of(data)
    turn_start = next(e.seq for e in events if e.type == "turn/start")
    assert contrast["droppedSeqs"] == [e.seq for e in events if e.seq >= turn_start]
    assert contrast["truncate"]["keptEvents"] == turn_start
    assert contrast["spawned"] == [{"pgid": 4242, "callId": "c1"}]
    complete = contrast["complete"]
    assert (complete["keptEvents"], complete["deletedEvents"]) == (len(events), 0)
    assert [c["type"] for c in complete["closers"]] == ["tool/result", "step/end", "turn/end"]
    assert {c["origin"] for c in complete["closers"]} == {"would-append"}
    assert contrast["file"]["unchanged"] and contrast["file"]["bytes"] == len(data)


def test_the_contrast_sees_a_changed_file() -> None:
    data = crashed_log()
    events = scan_log(data, strict=True).events
    changed = truncation_contrast(data, [*events, *repair_closers(events)], data + b"x")
    assert not changed["file"]["unchanged"] and changed["file"]["bytes"] == len(data) + 1


def test_closers_the_pure_core_does_not_name_are_refused() -> None:
    data = crashed_log()
    events = scan_log(data, strict=True).events
    with pytest.raises(ClosersDisagree, match="disagree about the closers"):
        truncation_contrast(data, events, data)  # the store named no closers


def test_mark_would_drop_marks_only_the_dropped_rows() -> None:
    data = crashed_log()
    events = scan_log(data, strict=True).events
    contrast = contrast_of(data)
    items = log_items(events, frozenset())
    mark_would_drop(items, contrast)
    assert [i["seq"] for i in items if i.get("would") == "drop"] == contrast["droppedSeqs"]


def test_facts_are_filed_under_the_running_step() -> None:
    findings = Findings()
    findings.fact("set up")
    findings.step = 2
    findings.fact("measured", "aborted")
    assert findings.facts == [
        {"text": "set up", "tone": "ok", "step": None},
        {"text": "measured", "tone": "aborted", "step": 2},
    ]


def test_run_snapshot_of_a_crashed_log_with_no_worker() -> None:
    data = crashed_log()
    events = scan_log(data, strict=True).events
    spawned = next(e for e in events if e.type == "tool/spawned")
    findings = Findings(cut_after=events[-1].seq, contrast=contrast_of(data))
    findings.fact("the log ends mid-turn")
    shown = run_snapshot(
        log_path="sessions/demo/session.jsonl",
        events=events,
        runtime=RuntimeView(),
        groups=[Group.from_spawned(spawned)],
        progress=["test 1/200 ok", "test 2/200 ok"],
        findings=findings,
    )
    assert set(shown) == {"log", "runtime", "contrast", "facts"}
    log = shown["log"]
    assert (log["path"], log["cutAfter"], log["recoveredFrom"], log["openTurn"]) == (
        "sessions/demo/session.jsonl",
        events[-1].seq,
        None,
        1,
    )
    assert [i["seq"] for i in log["items"]] == [e.seq for e in events]
    dropped = [i["seq"] for i in log["items"] if i.get("would") == "drop"]
    assert findings.contrast is not None and dropped == findings.contrast["droppedSeqs"]
    runtime = shown["runtime"]
    # No worker runs: the group the log names is alive, so it is an orphan.
    assert runtime["groups"] == [
        {
            "pgid": 4242,
            "callId": "c1",
            "alive": True,
            "members": [],
            "orphaned": True,
            "wasOrphaned": False,
        }
    ]
    assert runtime["progress"] == {"lines": 2, "last": "test 2/200 ok"}
    assert runtime["fold"] == {"endSeq": None, "droppedUnrun": False, "why": None}
    assert runtime["status"] == "idle" and runtime["notes"] == []
    assert list(runtime)[-1] == "notes"  # the notes come last, after what the engine adds
    assert shown["contrast"] is findings.contrast
    assert shown["facts"] == [{"text": "the log ends mid-turn", "tone": "ok", "step": None}]


@pytest.mark.parametrize("name", ["esc", "kill", "truncate"])
def test_recorded_view_replays_to_the_same_inputs_and_view(name: str) -> None:
    recorded = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    replayed = RecordedView.replay(recorded["inputs"])
    assert replayed.inputs == recorded["inputs"]
    assert replayed.view.to_json() == recorded["view"]


def _fold_vector(name: str) -> str | None:
    raw = json.loads((REPO / "spec" / "vectors" / "fold" / f"{name}.json").read_text("utf-8"))
    events = scan_log("".join(line + "\n" for line in raw["log"]).encode(), strict=False).events
    return fold_why(events, fold_consumed_work(events))


def test_fold_why_explains_a_drop_inside_a_turn_and_one_left_unrun() -> None:
    """Where the fold is shown, it says why (spec/consumed-work.md C3, C4): the Esc drop inside
    a turn is that turn's story; a drop after the last accounting turn never ran."""
    inside = _fold_vector("esc-clears-queue-during-turn")
    assert inside is not None and "before turn/end seq 8" in inside and "(C4)" in inside
    unrun = _fold_vector("cancel-after-accounting-turn")
    assert unrun is not None and "seq 10" in unrun and "ended at seq 8" in unrun
    assert "never ran" in unrun
    waking = _fold_vector("cancel-in-the-waking-tick")
    assert waking is not None and "no turn has accounted" in waking
    assert _fold_vector("replacement-is-not-a-drop") is None
    assert _fold_vector("only-inserts") is None
