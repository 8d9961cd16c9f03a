"""The runtime view, replayed from worker reports recorded in real runs; the reports' checks.

``fixtures/reports/<scenario>.json`` holds every input a real run of that scenario fed its
runtime view (worker starts, each report line as the worker wrote it, worker exits) and the
view the live run ended with; ``record_reports.py`` re-records them. The view is a pure
reducer, so replaying the same inputs here, with no process and no trio, must give the same
view, and the views along the way must tell the story each scenario is about.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

import trio_agent.demo.contrast as contrast_module
import trio_agent.demo.playback as playback_module
import trio_agent.demo.reports as reports_module
import trio_agent.demo.runtime_view as view_module
import trio_agent.demo.snapshot as snapshot_module
from trio_agent.demo.engine import DemoError, open_run
from trio_agent.demo.reports import REPORTS, BadReport, ControllerSeen, encode, parse
from trio_agent.demo.runtime_view import RecordedView, RuntimeView

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "reports"
SCENARIOS = ("esc", "kill", "truncate")


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def replay(inputs: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], RuntimeView]]:
    """Feed the inputs to a fresh view, yielding ``(input, view after it)`` for each."""
    recorded = RecordedView()
    for item in inputs:
        recorded.feed(item)
        yield item, recorded.view


def final(name: str) -> RuntimeView:
    """The view after every recorded input of scenario ``name``."""
    views = [view for _, view in replay(recorded(name)["inputs"])]
    return views[-1]


def after(inputs: list[dict[str, Any]], pred: Any) -> dict[str, Any]:
    """The view (a JSON copy) right after the first input matching ``pred``."""
    for item, view in replay(inputs):
        if pred(item):
            copied: dict[str, Any] = json.loads(json.dumps(view.to_json()))
            return copied
    raise AssertionError("no such input")


def is_report(kind: str, **fields: Any) -> Any:
    def pred(item: dict[str, Any]) -> bool:
        r = item.get("report")
        return r is not None and r["type"] == kind and all(r[k] == v for k, v in fields.items())

    return pred


@pytest.mark.parametrize("name", SCENARIOS)
def test_replay_gives_the_view_the_live_run_showed(name: str) -> None:
    assert final(name).to_json() == recorded(name)["view"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_recorded_report_round_trips(name: str) -> None:
    for item in recorded(name)["inputs"]:
        if "report" in item:
            report = parse(orjson.dumps(item["report"]))
            assert orjson.loads(encode(report)) == item["report"]


def test_esc_view_tells_the_cancel_story() -> None:
    inputs = recorded("esc")["inputs"]
    # At Esc: the live controller of turn 1 is cancelled with cause user, still held.
    at_esc = after(inputs, is_report("cancel", controller=1))
    c1 = at_esc["controllers"][0]
    assert (c1["turn"], c1["cause"], c1["released_before_seq"]) == (1, "user", None)
    assert at_esc["current"] == 1 and at_esc["status"] == "running"
    assert [d["text"] for d in at_esc["dropped"]] == ["Then update the changelog."]
    # Released before its turn/end was written, then the turn ends aborted.
    released = after(inputs, is_report("controller", controller=1, state="released"))
    assert released["controllers"][0]["released_before_seq"] is not None
    assert released["outcomes"] == []  # the worker reports the turn's end after its turn/end

    view = final("esc").to_json()
    c1, c2, c3 = view["controllers"]  # the fourth, made and closed with nothing to say, is left out
    assert [s.split(" ")[0] for s in c1["states"]] == ["live", "cancelled,", "released"]
    assert c2["turn"] is None and c2["prevented"] and c2["cause"] == "user"
    assert c2["states"] == [
        "cancelled, cause user",
        "closed: its turn never started (no turn/start)",
    ]
    assert c3["turn"] == 2 and c3["cause"] is None and c3["released_before_seq"] is not None
    assert [(o["turn"], o["reason"], o["cause"]) for o in view["outcomes"]] == [
        (1, "aborted", "user"),
        (2, "completed", None),
    ]
    assert [(d["target"], d["cause"]) for d in view["dropped"]] == [("next-turn", "user")] * 2
    assert view["notes"] == [] and view["recovery"] is None
    assert [(w["state"], w["exit"]) for w in view["workers"]] == [("exited", "exited with code 0")]


def test_kill_view_loses_the_controller_and_numbers_across_workers() -> None:
    inputs = recorded("kill")["inputs"]
    killed = after(inputs, lambda i: i.get("exit") == -9)
    assert killed["status"] == "gone" and killed["current"] is None
    assert killed["workers"][0]["state"] == "killed"
    assert killed["workers"][0]["exit"] == "killed by SIGKILL"
    (c1,) = killed["controllers"]
    assert c1["lost"] and c1["released_before_seq"] is None
    assert c1["states"][-1] == "died with the worker: no cancel, no finally, no turn/end"

    recovered = after(inputs, is_report("recovered"))
    assert recovered["recovery"] is not None
    assert [c["type"] for c in recovered["recovery"]] == ["tool/result", "step/end", "turn/end"]

    view = final("kill")
    assert view.recovery_seqs == {c["seq"] for c in recovered["recovery"]}
    shown = view.to_json()
    # Worker 2 counts its controllers from 1 again; the view numbers them on.
    c1, c2 = shown["controllers"]
    assert (c1["n"], c1["worker"], c1["turn"]) == (1, 1, 1)
    assert (c2["n"], c2["worker"], c2["turn"], c2["lost"]) == (2, 2, 2, False)
    assert [(w["mode"], w["state"]) for w in shown["workers"]] == [
        ("create", "killed"),
        ("open", "exited"),
    ]
    assert [(o["turn"], o["reason"]) for o in shown["outcomes"]] == [(2, "completed")]


def test_truncate_view_shows_the_recovery() -> None:
    view = final("truncate").to_json()
    assert [c["type"] for c in view["recovery"]] == ["tool/result", "step/end", "turn/end"]
    assert "INTERRUPTED" in view["recovery"][-1]["text"]
    assert view["outcomes"] == []  # the interrupted turn was ended by recovery, not by a worker
    (c1,) = view["controllers"]
    assert c1["lost"] and c1["turn"] == 1


def test_a_second_exit_does_not_lose_a_controller_twice() -> None:
    view = RuntimeView()
    worker = view.start_worker("create", 1)
    view.apply(worker, ControllerSeen(controller=1, turn=1, state="live", seq=1))
    view.worker_exited(worker, -9)
    view.worker_exited(worker, -9)
    assert (
        view.controllers[1].states.count("died with the worker: no cancel, no finally, no turn/end")
        == 1
    )


# -- malformed reports ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "bad report: not JSON"),
        (b"[1, 2]", 'bad report: expected a JSON object with a "type"'),
        (b'{"status": "idle"}', "bad report: $.type: is missing"),
        (b'{"type": "nope"}', "bad report: $.type: unknown report type 'nope'"),
        (b'{"type": "ready"}', "bad report ready: $.events: is missing"),
        (
            b'{"type": "ready", "events": "3"}',
            "bad report ready: $.events: expected an integer, got str '3'",
        ),
        (
            b'{"type": "ready", "events": 3, "evnts": 3}',
            "bad report ready: $: unknown field(s): evnts",
        ),
        (
            b'{"type": "status", "status": "busy"}',
            "bad report status: $.status: must be one of 'idle', 'running'",
        ),
        (
            b'{"type": "cancel", "cause": "user", "hit": 1, "controller": null, "turn": null}',
            "bad report cancel: $.hit: expected a boolean, got int 1",
        ),
        (
            b'{"type": "inbox", "next_turn": "abc", "next_step": []}',
            "bad report inbox: $.next_turn: expected an array, got str 'abc'",
        ),
        (
            b'{"type": "recovered", "closers": [{"seq": 1, "type": "step/end"}]}',
            "bad report recovered: $.closers[0].text: is missing",
        ),
    ],
)
def test_a_malformed_report_names_the_field_and_why(line: bytes, message: str) -> None:
    with pytest.raises(BadReport) as info:
        parse(line)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_recorded_report_missing_a_field_is_refused_by_name(name: str) -> None:
    seen = set()
    for item in recorded(name)["inputs"]:
        report = item.get("report")
        if report is None:
            continue
        seen.add(report["type"])
        cls = REPORTS[report["type"]]
        required = {f.name for f in attrs.fields(cls) if f.default is attrs.NOTHING}
        for field in required:
            broken = {k: v for k, v in report.items() if k != field}
            with pytest.raises(
                BadReport, match=rf"^bad report {report['type']}: \$\.{field}: is missing"
            ):
                parse(orjson.dumps(broken))
    assert {"ready", "controller", "current", "inbox", "bye"} <= seen


async def test_a_malformed_report_fails_the_run_in_one_line() -> None:
    async with open_run() as run:
        worker = run.runtime.start_worker("create", 1)
        run._on_report(worker, b'{"type": "controller", "controller": 1, "turn": "one"}')
        with pytest.raises(DemoError) as info:
            await run.wait_until(lambda: False, "nothing")
    assert str(info.value) == (
        "worker 1: bad report controller: $.turn: expected an integer, got str 'one'; "
        "$.state: is missing; $.seq: is missing"
    )


def test_the_view_and_the_reports_are_pure() -> None:
    """No trio and no I/O in the reducer, the report classes, the snapshot, the contrast and
    the playback (the engine does both)."""
    for module in (view_module, reports_module, snapshot_module, contrast_module, playback_module):
        assert module.__file__ is not None
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
        forbidden = imported & {"trio", "os", "io", "socket", "subprocess", "pathlib", "shutil"}
        assert not forbidden, f"{module.__name__} imports {forbidden}"
