"""The three scenarios: Esc, kill -9 then restart, and truncation for contrast.

Each step is an action on a :class:`~trio_agent.demo.engine.Run` (send a message, press Esc,
kill the worker, restart it, ...) followed by a bounded wait for what the action makes
happen, and a caption saying what the step adds to the log or drops from it, and why.
The facts a step records are measured (read from the log, ``/proc`` or the file), not
assumed.

The stand-in test suite moves only as far as the steps let it
(:meth:`~trio_agent.demo.engine.Run.allow_more_tests`): starting the turn allows a few tests,
queueing a follow-up a few more, and after ``kill -9`` a few more show the orphan still at
work. Between steps it waits, so a reader may stay on any step for as long as they like: the
tool is still running when they go on, and every check below still holds.
"""

from __future__ import annotations

from typing import Any, Final

from ..log import Event, SpliceKind, fold_consumed_work, splice_kind
from .engine import DemoError, Run
from .playback import Scenario, Step
from .workdir import TESTS

FIRST_REQUEST: Final = "Run the test suite."
QUEUED_REQUEST: Final = "Then update the changelog."
SAME_TICK_REQUEST: Final = "Actually, also bump the version."
AFTER_ESC_REQUEST: Final = "Skip the tests for now. Where do things stand?"
AFTER_CRASH_REQUEST: Final = "Did the tests pass?"

#: The model's first step: some streamed text, then the long-running bash call.
FIRST_STEP: Final[dict[str, Any]] = {
    "text": "I'll run the test suite and report back when it finishes.",
    "tool_calls": [{"name": "bash", "arguments": {"command": "./run-tests.sh"}}],
    "chunk_delay": 0.06,
}
#: What the worker of the Esc scenario answers after the abort.
ESC_SCRIPT: Final = [
    FIRST_STEP,
    {
        "text": "The test run was cancelled partway through, so its results are incomplete. "
        "Nothing else is running; tell me when to start it again.",
        "chunk_delay": 0.03,
    },
]
#: What the restarted worker answers: it sees the placeholder and does not assume success.
AFTER_CRASH_SCRIPT: Final = [
    {
        "text": "I can't tell: the session stopped while the test run was going, and the "
        "recorded outcome is unknown. I won't assume it passed; I can run it again.",
        "chunk_delay": 0.03,
    }
]
#: Tool output lines to wait for before acting on a running tool.
OUTPUT_LINES: Final = 3
#: Tests the suite may run when the turn starts (then it waits for the story).
FIRST_ALLOWANCE: Final = OUTPUT_LINES + 2
#: Tests more while a follow-up is queued, and for the orphan after kill -9.
MORE_TESTS: Final = 3


def _output_lines(run: Run, before: int | None = None) -> int:
    """Complete lines of tool output in the log (only those of events before seq ``before``,
    if given). Lines are counted, not events: a ``tool/output`` is one read of the pipe
    (spec/tools.md §7), and a busy worker reads several of the suite's lines at once."""
    return sum(
        e.data["text"].count("\n")
        for e in run.find("tool/output")
        if before is None or e.seq < before
    )


async def setup_fresh(run: Run) -> None:
    """Every scenario starts with a new session and an idle agent."""
    await run.start_worker("create", ESC_SCRIPT)


async def start_turn(run: Run) -> None:
    run.allow_more_tests(FIRST_ALLOWANCE)
    await run.send({"cmd": "followup", "text": FIRST_REQUEST})
    await run.wait_until(
        lambda: _output_lines(run) >= OUTPUT_LINES, f"{OUTPUT_LINES} lines of tool output"
    )
    spawned = run.find("tool/spawned")[0]
    pgid = spawned.data["pgid"]
    run.fact(f"tool/call is durable before the body ran: seq {run.find('tool/call')[0].seq}")
    run.fact(
        f"the test suite runs as process group {pgid}, {_contained(spawned)}; "
        f"{_output_lines(run)} lines of output are already on disk"
    )


def _contained(spawned: Event) -> str:
    """Which containment tool/spawned recorded, in words (spec/tools.md §10)."""
    if spawned.data.get("containment") == "pid-namespace":
        return "contained by the kernel in a PID namespace of its own"
    return "contained only as a process group (the fallback of spec/tools.md §10)"


def _group_gone(run: Run, pgid: int) -> bool:
    run.poll_groups()  # /proc, read again now
    return not run.groups[pgid].alive


def _namespaced(run: Run) -> bool:
    return run.find("tool/spawned")[0].data.get("containment") == "pid-namespace"


START: Final = Step(
    "Start a turn",
    "A follow-up wakes the idle agent, which creates the turn's controller on the spot. The "
    "driver then logs turn/start, claims the message from the inbox and opens step 1 with the "
    "user's message. The model's reply arrives in chunks and each one is appended as it "
    "comes; its assistant/message asks for bash. tool/call is the dispatch marker, flushed "
    "to disk before the command starts; tool/spawned names the new process group with an "
    "identity that survives pid reuse; every line the tests print becomes a tool/output.",
    start_turn,
)


# -- Esc ----------------------------------------------------------------------------------------


async def queue_followup(run: Run) -> None:
    run.allow_more_tests(MORE_TESTS)
    await run.send({"cmd": "followup", "text": QUEUED_REQUEST})
    await run.wait_until(
        lambda: (
            QUEUED_REQUEST in run.runtime.inbox["next_turn"]
            and any(
                splice_kind(e.data) is SpliceKind.INSERT and e.seq > 0
                for e in run.find("agent/inbox/spliced")
            )
        ),
        "the follow-up to be queued",
    )
    run.fact("the follow-up is queued in next-turn; the running turn is not disturbed")


async def press_esc(run: Run) -> None:
    pgid = run.find("tool/spawned")[0].data["pgid"]
    group = run.groups[pgid]
    await run.send({"cmd": "esc"})
    await run.wait_until(lambda: run.turn_end(1) is not None, "turn/end of turn 1")
    await run.wait_until(lambda: run.runtime.status == "idle", "the agent to go idle")
    end = run.turn_end(1)
    assert end is not None
    if end.data["reason"]["kind"] != "aborted":
        raise DemoError(
            f"turn 1 ended {end.data['reason']['kind']} before Esc reached it, so there is no "
            "abort to show"
        )
    run.poll_groups()
    if group.alive:
        raise DemoError(f"process group {pgid} still has members after the abort: {group.members}")
    result = run.find("tool/result")[0]
    kept = _output_lines(run, before=result.seq)
    drop = run.find("agent/inbox/spliced", lambda e: splice_kind(e.data) is SpliceKind.DROP)[0]
    c1 = run.runtime.controllers.get(1)
    run.fact(f"queued follow-up dropped unrun by the clear splice (seq {drop.seq})", "dropped")
    run.fact(
        f"process group {pgid} is gone (no process left in /proc); tool/result ABORTED "
        f"(seq {result.seq}) was written only after it stopped",
        "aborted",
    )
    run.fact(f"{kept} lines of tool/output written before the cancel are kept")
    if c1 is not None and c1.released_before_seq is not None:
        run.fact(
            f"controller #1 was released before turn/end (seq {c1.released_before_seq}); "
            f"its cause, {c1.cause}, is known only at runtime"
        )


async def same_tick(run: Run) -> None:
    before = len(run.find("agent/inbox/spliced"))
    await run.send({"cmd": "followup_esc", "text": SAME_TICK_REQUEST})
    await run.wait_until(
        lambda: (
            len(run.find("agent/inbox/spliced")) >= before + 2
            and any(c.prevented for c in run.runtime.controllers.values())
        ),
        "the message to be queued and dropped",
    )
    await run.wait_until(lambda: run.runtime.status == "idle", "the agent to go idle")
    if len(run.find("turn/start")) != 1:
        raise DemoError("a turn started although the cancel came in the same tick")
    run.fact("no turn/start: the cancel reached the controller made at wake", "dropped")
    fold = fold_consumed_work(run.events)
    if not fold.dropped_unrun:
        raise DemoError("fold_consumed_work does not report the dropped message")
    run.fact(
        f"fold_consumed_work: dropped_unrun is true (last accounting turn/end: seq {fold.end_seq})",
        "dropped",
    )


async def followup_after_esc(run: Run) -> None:
    await run.send({"cmd": "followup", "text": AFTER_ESC_REQUEST})
    await run.wait_until(lambda: run.turn_end(2) is not None, "turn/end of turn 2")
    await run.wait_until(lambda: run.runtime.status == "idle", "the agent to go idle")
    end = run.turn_end(2)
    assert end is not None
    kind = end.data["reason"]["kind"]
    run.fact(f"turn 2 ended {kind}, with a controller of its own", "completed")


ESC: Final = Scenario(
    name="esc",
    title="Esc: cancel the running turn",
    summary=(
        "A turn is in full swing: the model has answered and a real test suite runs as a "
        "subprocess. Esc pulls this turn's cancel wire and nothing else: the work stops "
        "cleanly, the log records how the turn ended, and the next turn gets a wire of its own."
    ),
    setup=setup_fresh,
    steps=(
        START,
        Step(
            "Queue a follow-up",
            "A second message arrives while the turn is busy. It is appended to the next-turn "
            "queue as an inbox splice and waits there: turns never overlap, and only the "
            "driver claims input, at a step boundary.",
            queue_followup,
        ),
        Step(
            "Press Esc",
            "Esc calls agent.cancel(user). The inbox is cleared first: a splice with outcome "
            "canceled drops the queued follow-up before it ever ran. Then the live controller's "
            "cancel scope is cancelled. The bash body sends SIGTERM to its whole process group "
            "and returns only once every member is gone, so tool/result ABORTED comes after the "
            "output already printed, which stays. step/end closes the step before "
            "turn/end{aborted} closes the turn. The cause (user) is runtime state: the log says "
            "only aborted. The agent let go of the controller before turn/end was appended, so "
            "nothing can reach the finished turn any more. fold_consumed_work still says "
            "dropped_unrun false: the drop came before this turn's own turn/end, which "
            "accounts for the turn's input, so the drop is part of that turn's story.",
            press_esc,
        ),
        Step(
            "Send and cancel in one tick",
            "A follow-up wakes the agent, which makes a new controller immediately, and Esc "
            "lands before the driver even runs. The cancel finds that controller, so no turn "
            "starts: the message is queued and dropped again, with no turn/end after it. "
            "fold_consumed_work sees the canceled splice after the last turn that accounted "
            "for its input and reports dropped_unrun, so a UI can say honestly that the "
            "message was thrown away without running.",
            same_tick,
        ),
        Step(
            "Send another follow-up",
            "A fresh message gets a brand-new controller and an ordinary turn that completes. "
            "None of the earlier cancels reaches it: the old controllers are closed, and a "
            "cancel never arms anything for work that comes later. The completed turn accounts "
            "for the input it consumed, which resets dropped_unrun.",
            followup_after_esc,
        ),
    ),
)


# -- kill -9 ------------------------------------------------------------------------------------


async def kill_worker(run: Run) -> None:
    pgid = run.find("tool/spawned")[0].data["pgid"]
    pid = await run.kill_worker()
    run.fact(
        f"worker {pid} killed with SIGKILL; the log ends at seq {run.findings.cut_after}", "aborted"
    )
    if run.find("tool/result"):
        raise DemoError("the tool finished before the kill, so there is no orphan to show")
    if _namespaced(run):
        # The namespace's init had the worker as its lifeline: the kernel ends the tree.
        await run.wait_until(
            lambda: _group_gone(run, pgid), "the tool's PID namespace to end with the worker"
        )
        run.fact(
            f"the kernel ended the tool's PID namespace with the worker: /proc shows no "
            f"process of process group {pgid} any more, so nothing is left working unseen",
            "interrupted",
        )
        return
    # Only now may the suite go on: every line it writes from here on is the orphan's.
    lines_before = len(run.progress())
    run.allow_more_tests(MORE_TESTS)
    await run.wait_until(
        lambda: len(run.progress()) > lines_before + 1, "the orphan to keep working"
    )
    run.poll_groups()
    group = run.groups[pgid]
    if not group.alive:
        raise DemoError(f"process group {pgid} died with the worker")
    names = ", ".join(m.split(" ", 1)[1] for m in group.members)
    run.fact(
        f"process group {pgid} is still alive in /proc ({names}) and still working: "
        f"progress.log reached {run.progress()[-1]!r} after the crash",
        "interrupted",
    )


async def restart(run: Run) -> None:
    pgid = run.find("tool/spawned")[0].data["pgid"]
    run.findings.recovered_from = len(run.events)
    await run.start_worker("open", AFTER_CRASH_SCRIPT)
    await run.wait_until(lambda: run.turn_end(1) is not None, "the repaired turn/end")
    run.poll_groups()
    group = run.groups[pgid]
    if group.alive:
        raise DemoError(f"process group {pgid} survived recovery: {group.members}")
    added = [e for e in run.events if e.seq >= run.findings.recovered_from]
    run.fact(
        f"recovery appended {len(added)} events and removed none: "
        + ", ".join(e.type for e in added),
        "interrupted",
    )
    if _namespaced(run):
        run.fact(
            "recovery looked and found nothing to stop; the placeholder says the call's PID "
            "namespace ended with the worker that started it",
            "placeholder",
        )
    else:
        run.fact(
            f"process group {pgid} was stopped before the placeholder was written", "placeholder"
        )


async def continue_after_crash(run: Run) -> None:
    await run.send({"cmd": "followup", "text": AFTER_CRASH_REQUEST})
    await run.wait_until(lambda: run.turn_end(2) is not None, "turn/end of turn 2")
    await run.wait_until(lambda: run.runtime.status == "idle", "the agent to go idle")
    end = run.turn_end(2)
    assert end is not None
    run.fact(f"turn 2 ended {end.data['reason']['kind']} on the repaired log", "completed")


KILL_STEP: Final = Step(
    "kill -9 the worker",
    "The engine sends SIGKILL to the worker process. No finally block runs: the log stops "
    "mid-turn, with a tool/call that has no tool/result, an open step and an open turn. "
    "Nobody told the tool. Where the kernel gives each call a PID namespace (the default "
    "where it can), the tool's whole tree dies with the worker: the namespace's init has the "
    "worker as its lifeline. Under the process-group fallback it lives on as an orphan, "
    "still doing work (its progress file keeps growing), with no one reading what it prints.",
    kill_worker,
)

KILL: Final = Scenario(
    name="kill",
    title="kill -9, then restart",
    summary=(
        "A crash runs no cleanup at all. The worker process that runs the agent is killed "
        "with SIGKILL while the tool is running, and the log simply stops. A new worker opens "
        "the session cold and completes the interrupted turn instead of cutting it away."
    ),
    setup=setup_fresh,
    steps=(
        START,
        KILL_STEP,
        Step(
            "Restart",
            "A new worker opens the session. Its file lock is free, so the session is cold and "
            "is repaired before anything else. First recovery looks for what the call named by "
            "tool/spawned left running: nothing, when its PID namespace ended with the worker; "
            "under the fallback, the orphaned group, stopping only what carries the call's "
            "marker, and never a call whose runtime still runs, so neither a forged log nor a "
            "copy of a live one gets anyone's processes killed. "
            "Then the closers are appended: a placeholder tool/result TOOL_OUTCOME_UNKNOWN (the "
            "call was dispatched but no result was recorded, so retrying blindly is unsafe), "
            "step/end, and turn/end{interrupted}, the one ending only recovery writes. "
            "Everything durable from before the crash stays.",
            restart,
        ),
        Step(
            "Continue",
            "The next message starts turn 2 on the repaired log. The model sees the whole "
            "conversation, the placeholder included, so it knows the test run's outcome is "
            "unknown rather than assuming it passed. The turn completes normally.",
            continue_after_crash,
        ),
    ),
)


# -- truncate (contrast) ------------------------------------------------------------------------


async def show_truncation(run: Run) -> None:
    contrast = await run.compute_contrast()
    t = contrast["truncate"]
    if not contrast["file"]["unchanged"]:
        raise DemoError("the session file changed while computing the truncate report")
    run.fact(
        f"truncation would drop {t['droppedEvents']} of "
        f"{t['droppedEvents'] + t['keptEvents']} events: {t['streamedChars']} characters of "
        f"streamed text, {t['toolOutputBytes']} bytes of tool output",
        "aborted",
    )
    for spawned in contrast["spawned"]:
        # Only the fallback leaves the group running; /proc says which, read just now.
        run.poll_groups()
        group = run.groups.get(spawned["pgid"])
        running = group is not None and group.alive
        state = "which is still running" if running else "which no longer runs"
        run.fact(
            f"it would forget dispatched call {spawned['callId']} and the tool/spawned record of "
            f"process group {spawned['pgid']}, {state}: nothing would tell a reader it ran",
            "aborted",
        )
    run.fact(
        f"{t['reclaimedMessages']} claimed message would go back to the queue and run again",
        "dropped",
    )
    run.fact(
        f"read-only: session.jsonl is unchanged ({contrast['file']['bytes']} bytes, "
        f"sha256 {contrast['file']['sha256']}…)"
    )


async def complete_instead(run: Run) -> None:
    await restart(run)
    contrast = run.findings.contrast or {}
    dropped = contrast.get("truncate", {}).get("droppedEvents", 0)
    before = run.findings.before_recovery or b""
    if not run.log_path.read_bytes().startswith(before):
        raise DemoError("recovery changed bytes that were already in the file")
    run.fact(
        f"the file still starts with the same {len(before)} bytes: all {dropped} events "
        "truncation would have dropped are kept",
        "completed",
    )


TRUNCATE: Final = Scenario(
    name="truncate",
    title="Truncate, for contrast",
    summary=(
        "The same crash, and the recovery trio_agent rejects: deleting the open turn as if it "
        "never ran. The truncation below is a read-only report, never written to the log. "
        "Then the demo recovers for real, by completion, and the two can be compared."
    ),
    setup=setup_fresh,
    steps=(
        START,
        KILL_STEP,
        Step(
            "What truncation throws away",
            "Truncation keeps only the events before the open turn's turn/start. All the turn "
            "produced goes with it: the streamed text, every line of tool output, the dispatch "
            "marker that says the command ran, even the tool/spawned record naming its process "
            "group, the one thing that lets recovery find it. The claimed message "
            "quietly returns to the queue and would run again from scratch. Marked in the log, "
            "computed read-only: the file on disk does not change.",
            show_truncation,
        ),
        Step(
            "Complete instead",
            "What trio_agent does: a new worker opens the session cold, stops the orphaned "
            "group, and appends three closers (the TOOL_OUTCOME_UNKNOWN placeholder, step/end, "
            "turn/end{interrupted}). Nothing is deleted; every event truncation would have "
            "dropped is still there.",
            complete_instead,
        ),
    ),
)

SCENARIOS: Final = {s.name: s for s in (ESC, KILL, TRUNCATE)}

__all__ = ["ESC", "KILL", "SCENARIOS", "TESTS", "TRUNCATE"]
