"""The scenario engine: each scenario's real log passes the checker and shows what it claims.

Every scenario runs for real here: a worker process, a bash process group, a JSONL file, a
real SIGKILL. The log is read from the file before the run is torn down and checked with the
same pure core as ``trio-agent check`` (strict, and balanced at the end).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from support.demo.helpers import HANG_GUARD, stepped
from support.proc import in_group

from trio_agent.demo.engine import PACE_VAR, DemoError, Driver, Run, open_run, pace_from_env
from trio_agent.demo.scenarios import (
    AFTER_CRASH_REQUEST,
    ESC_SCRIPT,
    FIRST_ALLOWANCE,
    FIRST_REQUEST,
    OUTPUT_LINES,
    QUEUED_REQUEST,
    SAME_TICK_REQUEST,
    SCENARIOS,
)
from trio_agent.demo.workdir import TEST_PACE, TESTS
from trio_agent.log import (
    OUTCOME_UNKNOWN_TEXT,
    REAPED_TEXTS,
    Event,
    Scan,
    fold_consumed_work,
    scan_log,
)
from trio_agent.procs.containment import POLICY_VAR


class Played:
    def __init__(self, scan: Scan, snapshot: dict[str, Any], run_dir: Path, data: bytes) -> None:
        self.scan = scan
        self.events = scan.events
        self.snapshot = snapshot
        self.run_dir = run_dir
        self.data = data

    def of(self, type_: str, pred: Callable[[Event], bool] = lambda e: True) -> list[Event]:
        return [e for e in self.events if e.type == type_ and pred(e)]

    def one(self, type_: str, pred: Callable[[Event], bool] = lambda e: True) -> Event:
        found = self.of(type_, pred)
        assert len(found) == 1, (type_, found)
        return found[0]


async def play(name: str, steps: int | None = None) -> Played:
    """Run a scenario (all steps, or the first ``steps``) and return its checked log."""
    with trio.fail_after(HANG_GUARD * 2):
        async with open_run() as run:
            driver = Driver(SCENARIOS[name], run, dwell=0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(driver.main)
                await run.wait_until(lambda: driver.ready, "setup")
                total = len(driver.scenario.steps) if steps is None else steps
                for n in range(1, total + 1):
                    driver.step()
                    await run.wait_until(stepped(driver, n), "a step")
                    assert driver.error is None, driver.error
                run.poll_log()
                snapshot = driver.snapshot()
                data = run.log_path.read_bytes()
                nursery.cancel_scope.cancel()
            run_dir = run.dir
    scan = scan_log(data, strict=True)  # every line valid, every rule kept
    assert scan.tail is None
    return Played(scan, snapshot, run_dir, data)


async def test_a_wait_that_runs_out_names_the_last_event_read() -> None:
    """A wait that gives up says how far the story got: the last event of the log, the same
    one the test reads from the file itself; before there is any, that there is none."""
    nothing = "gave up after 0s waiting for nothing (the log's last event: {})"
    with trio.fail_after(HANG_GUARD):
        async with open_run() as run:
            with pytest.raises(DemoError) as before:
                await run.wait_until(lambda: False, "nothing", timeout=0)
            assert str(before.value) == nothing.format("no event yet")
            await run.start_worker("create", ESC_SCRIPT)
            # The turn's tool starts, then waits for an allowance that never comes: the log
            # stays as it is.
            await run.send({"cmd": "followup", "text": FIRST_REQUEST})
            await run.wait_until(lambda: bool(run.find("tool/spawned")), "the tool")
            run.poll_log()
            last = scan_log(run.log_path.read_bytes(), strict=True).events[-1]
            with pytest.raises(DemoError) as after:
                await run.wait_until(lambda: False, "nothing", timeout=0)
            assert str(after.value) == nothing.format(f"seq {last.seq} {last.type}")


async def test_the_first_step_counts_lines_when_one_read_holds_several() -> None:
    """A ``tool/output`` is one read of the pipe (spec/tools.md §7), and a busy worker reads
    several of the suite's lines at once. The first step waits for lines of output, not for
    events: here the suite prints every test it is allowed in one write, so the log gets
    them in one event, and the step still ends and counts the lines. Counting events, it
    waited for three until its two-minute bound while the suite sat at its allowance (seen
    once in a loaded run of the suite, at the tests' fast pace)."""
    lines = "".join(f"test {i}/{TESTS} ok\n" for i in range(1, FIRST_ALLOWANCE + 1))
    # cat copies the file in one write (a pipe takes up to 4096 bytes at once, so one read
    # gets all of it); bash's own printf writes line by line. Then the tool, like the suite
    # at its allowance, keeps running.
    suite = "#!/usr/bin/env bash\ncat lines.txt\nexec sleep 1000\n"
    with trio.fail_after(HANG_GUARD * 4):
        async with open_run() as run:
            (run.workdir / "lines.txt").write_text(lines, encoding="utf-8")
            (run.workdir / "run-tests.sh").write_text(suite, encoding="utf-8")
            driver = Driver(SCENARIOS["esc"], run, dwell=0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(driver.main)
                await run.wait_until(lambda: driver.ready, "setup")
                driver.step()
                await run.wait_until(stepped(driver, 1), "the first step")
                assert driver.error is None, driver.error
                run.poll_log()
                outputs = [e.data["text"] for e in run.find("tool/output")]
                facts = [f["text"] for f in run.findings.facts]
                nursery.cancel_scope.cancel()
    assert outputs == [lines]  # the case itself: fewer events than the step waits lines for
    assert FIRST_ALLOWANCE > OUTPUT_LINES > len(outputs)
    assert any(f"; {FIRST_ALLOWANCE} lines of output are already on disk" in f for f in facts)


def assert_balanced(played: Played) -> None:
    assert played.scan.checker.open_turn is None
    assert played.scan.checker.balanced


async def test_esc_scenario_log_and_runtime() -> None:
    p = await play("esc")
    assert_balanced(p)
    assert [e.data["reason"]["kind"] for e in p.of("turn/end")] == ["aborted", "completed"]
    assert p.snapshot["log"]["items"][-1]["type"] == "turn/end"

    # The tool printed, was cancelled, and its output stayed, with ABORTED after it.
    result = p.one("tool/result")
    call_id = result.data["callId"]
    outputs = p.of("tool/output", lambda e: e.data["callId"] == call_id)
    printed = "".join(e.data["text"] for e in outputs).splitlines()
    assert len(printed) >= OUTPUT_LINES  # lines: one event may hold several
    assert all(e.seq < result.seq for e in outputs)
    assert all(line.startswith("test ") for line in printed)
    assert result.data["error"] == {"code": "ABORTED"}
    assert p.one("tool/call").seq < p.one("tool/spawned").seq < outputs[0].seq

    # step/end closes the step right before turn/end{aborted} closes the turn.
    end1 = p.of("turn/end")[0]
    assert p.events[end1.seq - 1].type == "step/end"
    assert p.events[end1.seq - 2] == result
    assert "cause" not in end1.data["reason"]  # who cancelled is never in the log

    # The queued follow-up was dropped unrun by the clear, before the turn ended.
    queued = p.one(
        "agent/inbox/spliced",
        lambda e: any(m["text"] == QUEUED_REQUEST for m in e.data["inserted"]),
    )
    drops = p.of("agent/inbox/spliced", lambda e: e.data.get("outcome") == "canceled")
    assert len(drops) == 2
    first_drop = drops[0]
    assert queued.seq < first_drop.seq < result.seq < end1.seq
    assert first_drop.data["inserted"] == [] and first_drop.data["removedCount"] == 1
    assert fold_consumed_work(p.events[: first_drop.seq + 1]).dropped_unrun
    # ... and the aborted turn's own end accounts for that story (DSH fold, rule C4).
    assert not fold_consumed_work(p.events[: end1.seq + 1]).dropped_unrun

    # Same tick: queued and dropped, no turn started in between, dropped_unrun true.
    same = p.one(
        "agent/inbox/spliced",
        lambda e: any(m["text"] == SAME_TICK_REQUEST for m in e.data["inserted"]),
    )
    second_drop = drops[1]
    assert second_drop.seq == same.seq + 1
    work = fold_consumed_work(p.events[: second_drop.seq + 1])
    assert work.dropped_unrun and work.end_seq == end1.seq

    # The next turn runs normally and resets the fold.
    end2 = p.of("turn/end")[1]
    assert end2.data == {"turn": 2, "reason": {"kind": "completed"}}
    final = fold_consumed_work(p.events)
    assert final.end_seq == end2.seq and not final.dropped_unrun

    # Runtime side: live -> cancelled (user) -> released before turn/end; a fresh one for turn 2.
    rt = p.snapshot["runtime"]
    c1, c2, c3 = rt["controllers"]
    assert c1["turn"] == 1 and c1["cause"] == "user"
    assert [s.split(" ")[0] for s in c1["states"]] == ["live", "cancelled,", "released"]
    assert c1["released_before_seq"] == end1.seq
    assert c2["turn"] is None and c2["prevented"] and c2["cause"] == "user"
    assert c3["turn"] == 2 and c3["cause"] is None and c3["released_before_seq"] == end2.seq
    assert [(o["turn"], o["reason"], o["cause"]) for o in rt["outcomes"]] == [
        (1, "aborted", "user"),
        (2, "completed", None),
    ]
    assert [d["text"] for d in rt["dropped"]] == [QUEUED_REQUEST, SAME_TICK_REQUEST]
    group = rt["groups"][0]
    assert not group["alive"] and in_group(group["pgid"]) == []
    assert rt["current"] is None and rt["status"] == "idle"


@pytest.mark.parametrize("containment", ["pid-namespace", "process-group"])
async def test_kill_scenario_completes_the_crashed_turn(
    containment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker inherits the policy: a namespace where the kernel gives one, else the group.
    policy = "required" if containment == "pid-namespace" else "process-group"
    monkeypatch.setenv(POLICY_VAR, policy)
    p = await play("kill")
    assert_balanced(p)
    snap = p.snapshot
    cut = snap["log"]["cutAfter"]
    assert cut is not None

    # Before the cut: a dispatched call with output and no result, open step, open turn.
    before = p.events[: cut + 1]
    assert [e.type for e in before if e.type in ("tool/result", "step/end", "turn/end")] == []
    spawned = p.one("tool/spawned")
    assert spawned.seq <= cut
    assert any(e.type == "tool/output" for e in before)

    # After the cut, written by recovery: placeholder, step/end, turn/end{interrupted}.
    closers = p.events[cut + 1 : cut + 4]
    assert [e.type for e in closers] == ["tool/result", "step/end", "turn/end"]
    placeholder = closers[0].data
    assert placeholder["error"] == {"code": "TOOL_OUTCOME_UNKNOWN"}
    assert placeholder["content"].startswith(
        OUTCOME_UNKNOWN_TEXT.format(name="bash", call_id=spawned.data["callId"])
    )
    assert spawned.data["containment"] == containment
    kind = "namespace-gone" if containment == "pid-namespace" else "stopped"
    assert placeholder["content"].endswith(REAPED_TEXTS[kind])
    assert closers[2].data == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert {i["seq"] for i in snap["log"]["items"] if i["origin"] == "recovery"} == {
        e.seq for e in closers
    }

    # Under the fallback the orphaned group was alive after the kill (the kill step waited to
    # see it work on). In a namespace it dies with the worker; a poll in the instant between
    # the worker's death and the kernel's teardown may see it orphaned, so that flag is not
    # the verdict there. Either way it is gone after the restart.
    group = snap["runtime"]["groups"][0]
    assert not group["alive"]
    if containment == "process-group":
        assert group["wasOrphaned"]
    assert in_group(spawned.data["pgid"]) == []

    # Every byte written before the crash is still there, and a later turn completes.
    end2 = p.of("turn/end")[1]
    assert end2.data == {"turn": 2, "reason": {"kind": "completed"}}
    assert any(e.data["message"]["text"] == AFTER_CRASH_REQUEST for e in p.of("user/message"))
    workers = snap["runtime"]["workers"]
    assert [(w["mode"], w["state"]) for w in workers] == [
        ("create", "killed"),
        ("open", "running"),
    ]


async def test_truncate_scenario_reports_without_writing() -> None:
    p = await play("truncate")
    assert_balanced(p)
    contrast = p.snapshot["contrast"]
    t = contrast["truncate"]
    assert contrast["file"]["unchanged"]
    assert t["turn"] == 1 and t["keptEvents"] == 1
    assert t["toolOutputBytes"] > 0 and t["streamedChars"] > 0
    assert t["dispatchedCalls"] == ["call-1-1-1"]
    assert t["reclaimedMessages"] == 1
    assert [c["type"] for c in contrast["complete"]["closers"]] == [
        "tool/result",
        "step/end",
        "turn/end",
    ]
    # The report was never written: after real recovery, every event it would drop is kept.
    dropped = set(contrast["droppedSeqs"])
    assert dropped and dropped <= {e.seq for e in p.events}
    assert p.events[-1].data == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert len(p.events) == contrast["complete"]["keptEvents"] + 3


async def test_teardown_mid_tool_leaves_nothing(leak_guard: str) -> None:
    """Leaving a run while its tool runs stops the worker and the whole tool group."""
    pgid = None
    with trio.fail_after(HANG_GUARD):
        async with open_run() as run:
            driver = Driver(SCENARIOS["esc"], run, dwell=0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(driver.main)
                await run.wait_until(lambda: driver.ready, "setup")
                driver.step()
                await run.wait_until(lambda: driver.completed >= 1, "the turn to start")
                pgid = run.find("tool/spawned")[0].data["pgid"]
                assert in_group(pgid)
                nursery.cancel_scope.cancel()
            run_dir = run.dir
    assert pgid is not None and in_group(pgid) == []
    assert not run_dir.exists()


async def test_teardown_after_kill_stops_the_orphan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with no restart, a run that ends after kill -9 stops the orphaned group (the
    process-group fallback, where a tool outlives its worker)."""
    monkeypatch.setenv(POLICY_VAR, "process-group")
    run_ref: list[Run] = []
    with trio.fail_after(HANG_GUARD):
        async with open_run() as run:
            run_ref.append(run)
            driver = Driver(SCENARIOS["kill"], run, dwell=0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(driver.main)
                await run.wait_until(lambda: driver.ready, "setup")
                for n in (1, 2):
                    driver.step()
                    await run.wait_until(stepped(driver, n, stop_on_error=False), "a step")
                pgid = run.find("tool/spawned")[0].data["pgid"]
                assert in_group(pgid)  # orphaned, still running
                nursery.cancel_scope.cancel()
    assert in_group(pgid) == []


def test_the_pace_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``$TRIO_AGENT_DEMO_PACE``: unset is the demo's own pace; a number of seconds from 0.001
    to 10 is taken; anything else is one error naming the variable (the demo tests set 0.05)."""
    monkeypatch.delenv(PACE_VAR, raising=False)
    assert pace_from_env() == TEST_PACE
    monkeypatch.setenv(PACE_VAR, " 0.25 ")
    assert pace_from_env() == 0.25
    for bad in ("fast", "0", "11", "nan"):
        monkeypatch.setenv(PACE_VAR, bad)
        with pytest.raises(DemoError, match=f"^{PACE_VAR}='{bad}': not a number of seconds"):
            pace_from_env()
