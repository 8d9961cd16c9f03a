#!/usr/bin/env python3
"""Write the conformance vectors of spec/vectors/ (format: spec/README.md, "Conformance vectors").

Every case below is designed by hand: a log that shows one thing, and the expectation read
off the spec (rule ids, closers, fold results, truncate reports are all written out here, not
computed). The only values derived mechanically are, for an invalid case, the line number of
the offending line and the seq written on it, which are facts about the file, not verdicts.

Usage: python3 spec/vectors/make_vectors.py   (standard library only; rewrites the folders)
"""

# ruff: noqa: E501, RUF005  (one case per call reads better than wrapped argument lists)

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
FOLDERS = ("valid", "invalid", "unreadable", "repair", "fold", "truncate", "torn", "checkpoint")
HEADER = {"type": "session", "version": 1, "id": "vec", "createdAt": 1000}
T0 = 1000  # the event at position n gets time T0 + 10 * n unless a case says otherwise

CASES: dict[str, dict[str, Any]] = {}


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# -- building events ------------------------------------------------------------------------
# An event under construction is {"type", "data"} plus optional "seq"/"time" overrides.
# A plain string in a log is a raw line, written as is (it takes no seq).


def E(type_: str, **data: Any) -> dict[str, Any]:
    return {"type": type_, "data": data}


def at(event: dict[str, Any], **override: Any) -> dict[str, Any]:
    """The same event with ``seq`` and/or ``time`` forced."""
    return {**event, **override}


def ts(t: int) -> dict[str, Any]:
    return E("turn/start", turn=t)


def te(t: int, kind: str = "completed") -> dict[str, Any]:
    reason: dict[str, Any] = {"kind": kind}
    if kind == "error":
        reason["error"] = {"code": "MODEL_ERROR", "message": "the model provider answered 500"}
    return E("turn/end", turn=t, reason=reason)


def ss(t: int, s: int) -> dict[str, Any]:
    return E("step/start", turn=t, step=s)


def se(t: int, s: int) -> dict[str, Any]:
    return E("step/end", turn=t, step=s)


def m(mid: str, source: str = "user") -> dict[str, Any]:
    return {"id": mid, "text": f"please handle {mid}", "source": source}


def ins(target: str, *messages: dict[str, Any], start: int = 0) -> dict[str, Any]:
    return E("agent/inbox/spliced", target=target, start=start, inserted=list(messages))


def claim(target: str = "next-turn", count: int = 1) -> dict[str, Any]:
    return E("agent/inbox/spliced", target=target, start=0, removedCount=count, inserted=[])


def drop(target: str, count: int = 1, start: int = 0, *inserted: dict[str, Any]) -> dict[str, Any]:
    return E(
        "agent/inbox/spliced",
        target=target,
        start=start,
        removedCount=count,
        inserted=list(inserted),
        outcome="canceled",
    )


def user(t: int, s: int, message: dict[str, Any]) -> dict[str, Any]:
    return E("user/message", turn=t, step=s, message=message)


def delta(t: int, s: int, text: str) -> dict[str, Any]:
    return E("assistant/chunk", turn=t, step=s, chunk={"type": "text-delta", "text": text})


def finish(t: int, s: int, reason: str = "stop") -> dict[str, Any]:
    return E("assistant/chunk", turn=t, step=s, chunk={"type": "finish", "reason": reason})


ARGS = {"path": "notes.txt"}
SLEEP = {"command": "sleep 30"}


def call_chunk(t: int, s: int, cid: str, name: str = "read_file", args: Any = None) -> dict[str, Any]:
    chunk = {"type": "tool-call", "id": cid, "name": name, "arguments": ARGS if args is None else args}
    return E("assistant/chunk", turn=t, step=s, chunk=chunk)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tc(cid: str, name: str = "read_file", args: Any = None) -> dict[str, Any]:
    return {"type": "tool-call", "id": cid, "name": name, "arguments": ARGS if args is None else args}


def amsg(t: int, s: int, *blocks: dict[str, Any], interrupted: bool = False, mid: str = "") -> dict[str, Any]:
    message = {"id": mid or f"a{t}.{s}", "content": list(blocks)}
    if interrupted:
        return E("assistant/message", turn=t, step=s, message=message, interrupted=True)
    return E("assistant/message", turn=t, step=s, message=message)


def asked(t: int, s: int, aid: str, cid: str, tool: str = "read_file") -> dict[str, Any]:
    return E("approval/asked", turn=t, step=s, id=aid, callId=cid, toolName=tool)


def decided(t: int, s: int, aid: str, outcome: str) -> dict[str, Any]:
    return E("approval/decided", turn=t, step=s, id=aid, outcome=outcome)


def call(t: int, s: int, cid: str, name: str = "read_file", args: Any = None) -> dict[str, Any]:
    return E("tool/call", turn=t, step=s, callId=cid, name=name, arguments=ARGS if args is None else args)


def spawned(t: int, s: int, cid: str, pgid: int = 4242, identity: str | None = None,
            **optional: Any) -> dict[str, Any]:
    return E("tool/spawned", turn=t, step=s, callId=cid, pgid=pgid,
             identity=f"{pgid}@1700000000.25" if identity is None else identity, **optional)


def out(t: int, s: int, cid: str, value: str, stream: str = "stdout") -> dict[str, Any]:
    return E("tool/output", turn=t, step=s, callId=cid, stream=stream, text=value)


def res(
    t: int, s: int, cid: str, content: str = "ok", code: str | None = None, is_error: bool | None = None
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "turn": t,
        "step": s,
        "callId": cid,
        "isError": (code is not None) if is_error is None else is_error,
        "content": content,
    }
    if code is not None:
        data["error"] = {"code": code}
    return {"type": "tool/result", "data": data}


def opening(t: int = 1, mid: str = "m1") -> list[dict[str, Any]]:
    """seq 0-4: queue a prompt, start turn t, claim it, start step 1, enter it."""
    return [ins("next-turn", m(mid)), ts(t), claim(), ss(t, 1), user(t, 1, m(mid))]


def text_turn(t: int, mid: str) -> list[dict[str, Any]]:
    """Nine events: a whole turn that claims ``mid`` and answers with text (seq 0-8 if first)."""
    return [
        ins("next-turn", m(mid)),
        ts(t),
        claim(),
        ss(t, 1),
        user(t, 1, m(mid)),
        delta(t, 1, "Done."),
        amsg(t, 1, text("Done.")),
        se(t, 1),
        te(t),
    ]


# -- placeholder texts (spec/recovery.md R4, R5), copied from the spec ------------------------

UNKNOWN = (
    "The {name} call {call_id} was recorded as started, but the session stopped before its "
    "result was recorded, so its outcome is unknown. Retry it only if the operation is "
    "read-only or idempotent; otherwise first verify external state or ask the user. "
    "Do not retry blindly."
)
NOT_STARTED = (
    "The {name} call {call_id} never started: the session stopped before it was dispatched. "
    "Retry it if it is still needed."
)
REAPED = {
    "stopped": (
        " Its process group was still running and was stopped during recovery: every process "
        "carrying the call's marker was stopped, but a process that had cleared its "
        "environment could have survived."
    ),
    "namespace-ended": (
        " Its PID namespace was still running and was ended during recovery: the kernel "
        "stopped every process in it."
    ),
    "namespace-gone": (
        " Its processes ran in a PID namespace tied to the runtime that started them, and the "
        "kernel ended that namespace when the runtime stopped."
    ),
    "owner-running": (
        " The runtime that started it is still running, so recovery signalled nothing: the "
        "call may still be running there."
    ),
}
STOPPED = REAPED["stopped"]
OTHER_HOST = (
    " Its process group was started on another host (boot id {boot_id}), or on this host "
    "before it restarted: recovery here could not stop it or tell whether it ended, and it "
    "may still be running there."
)
BOOT_A = "6b1f3a52-0c8e-4d2a-9f41-2f7d5c0e8a13"  # the host that started the tools
BOOT_B = "e0d94c7b-58a2-4b6f-8c3e-91a7f4d2b605"  # the host that recovers


def other_host(boot_id: str) -> str:
    return OTHER_HOST.format(boot_id=boot_id)


def unknown_text(name: str, cid: str) -> str:
    return UNKNOWN.format(name=name, call_id=cid)


def not_started_text(name: str, cid: str) -> str:
    return NOT_STARTED.format(name=name, call_id=cid)


def placeholder(t: int, s: int, cid: str, code: str, content: str) -> dict[str, Any]:
    return res(t, s, cid, content, code)


def full(seq: int, time: int, event: dict[str, Any]) -> dict[str, Any]:
    """An expected closer: the event with its seq and time written out."""
    return {"seq": seq, "time": time, "type": event["type"], "data": event["data"]}


# -- assembling files -----------------------------------------------------------------------


def render(items: list[Any], header: Any = HEADER) -> list[str]:
    lines = [header if isinstance(header, str) else dumps(header)]
    n = 0
    for item in items:
        if isinstance(item, str):
            lines.append(item)
            continue
        seq = item.get("seq", n)
        time = item.get("time", T0 + 10 * n)
        lines.append(dumps({"seq": seq, "time": time, "type": item["type"], "data": item["data"]}))
        n += 1
    return lines


def case(cid: str, description: str, items: list[Any], expect: dict[str, Any], **extra: Any) -> None:
    assert cid not in CASES, cid
    header = extra.pop("header", HEADER)
    log = extra.pop("raw_log", None)
    if log is None:
        log = render(items, header)
    body: dict[str, Any] = {"description": description, "log": log}
    body.update(extra)
    body["expect"] = expect
    CASES[cid] = body


def valid(cid: str, description: str, items: list[Any], balanced: bool, **extra: Any) -> None:
    case(f"valid/{cid}", description, items, {"valid": True, "balanced": balanced}, **extra)


def invalid(cid: str, description: str, items: list[Any], rule: str, offender: int = -1) -> None:
    """A log whose first problem is a violation of ``rule`` on item ``offender`` (default: last).

    The line number and the seq written on that line are read off the rendered file.
    """
    lines = render(items)
    line_index = len(lines) + offender if offender < 0 else offender
    obj = json.loads(lines[line_index])
    seq = obj.get("seq") if isinstance(obj, dict) else None
    seq = seq if type(seq) is int else None
    expect = {"valid": False, "rule": rule, "seq": seq, "line": line_index + 1}
    case(f"invalid/{rule}-{cid}", description, items, expect)


# ===========================================================================================
# valid/
# ===========================================================================================

valid("empty-log", "A header and no events: valid and balanced.", [], True)

valid(
    "one-turn-completed",
    "A prompt is queued, claimed by turn 1, entered into step 1, streamed and answered.",
    [*opening(), delta(1, 1, "Hello"), delta(1, 1, ", world"), finish(1, 1),
     amsg(1, 1, text("Hello, world")), se(1, 1), te(1)],
    True,
)

valid(
    "open-turn-after-claim",
    "A valid prefix: the turn is open and has claimed its prompt but no step has started yet.",
    [ins("next-turn", m("m1")), ts(1), claim()],
    False,
)

valid(
    "open-step-streaming",
    "A valid prefix: the model is streaming; no assistant/message yet.",
    [*opening(), delta(1, 1, "Par")],
    False,
)

valid(
    "open-step-dispatched-call",
    "A valid prefix: a subprocess tool is running (tool/call, tool/spawned, output, no result).",
    [*opening(), call_chunk(1, 1, "c1", "bash", SLEEP), finish(1, 1, "tool-calls"),
     amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP), spawned(1, 1, "c1"),
     out(1, 1, "c1", "tick\n")],
    False,
)

valid(
    "tool-call-then-second-step",
    "Step 1 requests a call that runs and answers; step 2 gives the final text.",
    [*opening(), call_chunk(1, 1, "c1"), amsg(1, 1, text("Let me look."), tc("c1")),
     call(1, 1, "c1"), out(1, 1, "c1", "line 1\n"), res(1, 1, "c1", "line 1\n"), se(1, 1),
     ss(1, 2), delta(1, 2, "It says line 1."), amsg(1, 2, text("It says line 1.")), se(1, 2),
     te(1)],
    True,
)

valid(
    "parallel-calls",
    "Two calls dispatched before either answers; their output interleaves; results in request order.",
    [*opening(), amsg(1, 1, tc("c1", "read_file", {"path": "a"}), tc("c2", "read_file", {"path": "b"})),
     call(1, 1, "c1", "read_file", {"path": "a"}), call(1, 1, "c2", "read_file", {"path": "b"}),
     out(1, 1, "c2", "bbb"), out(1, 1, "c1", "aaa"), res(1, 1, "c1", "aaa"), res(1, 1, "c2", "bbb"),
     se(1, 1), ss(1, 2), amsg(1, 2, text("a and b")), se(1, 2), te(1)],
    True,
)

valid(
    "results-not-in-request-order",
    "No rule orders results: the runtime commits them in request order (cancel.md K15), but a checker "
    "accepts c2's result before c1's.",
    [*opening(), amsg(1, 1, tc("c1", "read_file", {"path": "a"}), tc("c2", "read_file", {"path": "b"})),
     call(1, 1, "c1", "read_file", {"path": "a"}), call(1, 1, "c2", "read_file", {"path": "b"}),
     res(1, 1, "c2", "bbb"), res(1, 1, "c1", "aaa"), se(1, 1), te(1)],
    True,
)

valid(
    "approval-allowed",
    "The approval bracket comes before the dispatch marker; allowed, then tool/call and the body.",
    [*opening(), amsg(1, 1, tc("c1", "bash", {"command": "rm -rf build"})),
     asked(1, 1, "ap1", "c1", "bash"), decided(1, 1, "ap1", "allowed"),
     call(1, 1, "c1", "bash", {"command": "rm -rf build"}), spawned(1, 1, "c1"),
     res(1, 1, "c1", "removed"), se(1, 1), ss(1, 2), amsg(1, 2, text("Build removed.")),
     se(1, 2), te(1)],
    True,
)

valid(
    "approval-rejected-denied",
    "A rejected call is never dispatched and is answered DENIED (a not-dispatched code, I15).",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), asked(1, 1, "ap1", "c1", "bash"),
     decided(1, 1, "ap1", "rejected"), res(1, 1, "c1", "The user refused this call.", "DENIED"),
     se(1, 1), ss(1, 2), amsg(1, 2, text("Understood, I will not run it.")), se(1, 2), te(1)],
    True,
)

valid(
    "approval-cancelled-by-esc",
    "Esc while the approval prompt is up: cancelled, ABORTED_BEFORE_DISPATCH, turn aborted.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), asked(1, 1, "ap1", "c1", "bash"),
     decided(1, 1, "ap1", "cancelled"), res(1, 1, "c1", "cancelled", "ABORTED_BEFORE_DISPATCH"),
     se(1, 1), te(1, "aborted")],
    True,
)

valid(
    "approval-never-decided",
    "An approval that is never decided is not a violation (I12): here the call is answered "
    "ABORTED_BEFORE_DISPATCH and the step ends with the approval still open.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), asked(1, 1, "ap1", "c1", "bash"),
     res(1, 1, "c1", "cancelled", "ABORTED_BEFORE_DISPATCH"), se(1, 1), te(1, "aborted")],
    True,
)

valid(
    "steer-enters-next-step",
    "A steer queued on next-step during step 1 is claimed between steps and entered into step 2.",
    [*opening(), ins("next-step", m("m2", "steer")), amsg(1, 1, tc("c1")), call(1, 1, "c1"),
     res(1, 1, "c1"), se(1, 1), claim("next-step"), ss(1, 2), user(1, 2, m("m2", "steer")),
     amsg(1, 2, text("Adjusted.")), se(1, 2), te(1)],
    True,
)

valid(
    "followup-runs-as-next-turn",
    "A followup queued during turn 1 becomes turn 2.",
    [*opening(), ins("next-turn", m("m2")), amsg(1, 1, text("One.")), se(1, 1), te(1),
     ts(2), claim(), ss(2, 1), user(2, 1, m("m2")), amsg(2, 1, text("Two.")), se(2, 1), te(2)],
    True,
)

valid(
    "esc-mid-stream-clears-inbox",
    "Esc while streaming: both queues are cleared with canceled splices (next-step first), the "
    "visible prefix is kept as an interrupted message, and the turn ends aborted.",
    [*opening(), ins("next-turn", m("m2")), ins("next-step", m("m3", "steer")),
     delta(1, 1, "I was about to"), drop("next-step"), drop("next-turn"),
     amsg(1, 1, text("I was about to"), interrupted=True), se(1, 1), te(1, "aborted")],
    True,
)

valid(
    "interrupted-empty-prefix",
    "Esc before any visible text: an interrupted assistant/message may have empty content.",
    [*opening(), amsg(1, 1, interrupted=True), se(1, 1), te(1, "aborted")],
    True,
)

valid(
    "esc-before-step-output",
    "A step may end in its input phase (cancelled during prompt assembly).",
    [*opening(), se(1, 1), te(1, "aborted")],
    True,
)

valid(
    "error-turn",
    "A turn that fails ends error with reason.error {code, message}.",
    [*opening(), delta(1, 1, "Let me"), se(1, 1), te(1, "error")],
    True,
)

valid(
    "blocked-before-step",
    "A pre-step check refuses: the turn claimed its prompt and ends blocked without a step.",
    [ins("next-turn", m("m1")), ts(1), claim(), te(1, "blocked")],
    True,
)

valid(
    "max-tokens-turn",
    "The model stopped at its output limit; the turn ends max-tokens.",
    [*opening(), delta(1, 1, "A very long"), finish(1, 1, "length"),
     amsg(1, 1, text("A very long")), se(1, 1), te(1, "max-tokens")],
    True,
)

valid(
    "aborted-running-and-unstarted-calls",
    "Esc with c1 running and c2 not yet dispatched: c1 gets ABORTED after its body stopped, c2 "
    "ABORTED_BEFORE_DISPATCH.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP), tc("c2")), call(1, 1, "c1", "bash", SLEEP),
     spawned(1, 1, "c1"), out(1, 1, "c1", "tick\n"), res(1, 1, "c1", "aborted", "ABORTED"),
     res(1, 1, "c2", "aborted before dispatch", "ABORTED_BEFORE_DISPATCH"), se(1, 1),
     te(1, "aborted")],
    True,
)

valid(
    "aborted-after-dispatch-marker",
    "Once tool/call is written, a cancelled call is ABORTED even if its body had not begun (I15).",
    [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "aborted", "ABORTED"),
     se(1, 1), te(1, "aborted")],
    True,
)

valid(
    "cancel-in-the-waking-tick",
    "cancel.md K2: a cancel in the same tick as the waking send drops the message before any "
    "turn starts.",
    [ins("next-turn", m("m1")), drop("next-turn")],
    True,
)

valid(
    "repaired-outcome-unknown-then-next-turn",
    "A log repaired after kill -9 inside a tool body, then used again: turn 2 follows normally.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
     spawned(1, 1, "c1"), placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1")),
     se(1, 1), te(1, "interrupted"), ins("next-turn", m("m2")), ts(2), claim(), ss(2, 1),
     user(2, 1, m("m2")), amsg(2, 1, text("Back.")), se(2, 1), te(2)],
    True,
)

valid(
    "repaired-not-started",
    "A log repaired after kill -9 between the assistant message and dispatch: TOOL_NOT_STARTED.",
    [*opening(), amsg(1, 1, tc("c1")),
     placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
     se(1, 1), te(1, "interrupted")],
    True,
)

valid(
    "repaired-open-turn-without-step",
    "A turn may end interrupted without any placeholder.",
    [ins("next-turn", m("m1")), ts(1), claim(), te(1, "interrupted")],
    True,
)

valid(
    "repair-in-progress-prefix",
    "A crash during repair: one placeholder of two is durable. Still a valid prefix.",
    [*opening(), amsg(1, 1, tc("c1"), tc("c2")), call(1, 1, "c1"),
     placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c1"))],
    False,
)

valid(
    "reopened-queue-survives",
    "m2 stays queued across the crash of turn 1 and is claimed by turn 2.",
    [ins("next-turn", m("m1")), ins("next-turn", m("m2"), start=1), ts(1), claim(), ss(1, 1),
     user(1, 1, m("m1")), se(1, 1), te(1, "interrupted"), ts(2), claim(), ss(2, 1),
     user(2, 1, m("m2")), amsg(2, 1, text("Two.")), se(2, 1), te(2)],
    True,
)

valid(
    "time-goes-backwards",
    "time is informational: it may decrease (the wall clock stepped back) and no rule compares it.",
    [at(e, time=1764667200000 - 1000 * i) for i, e in enumerate(text_turn(1, "m1"))],
    True,
)

valid(
    "unknown-data-keys-ignored",
    "Unknown keys inside data, at any depth, are ignored; the header's unknown keys too.",
    [E("agent/inbox/spliced", target="next-turn", start=0, priority=3,
       inserted=[{"id": "m1", "text": "hi", "source": "user", "lang": "en"}]),
     E("turn/start", turn=1, model="scripted"), claim(), ss(1, 1),
     E("user/message", turn=1, step=1, message={"id": "m1", "text": "hi", "source": "user", "x": 1}),
     E("assistant/chunk", turn=1, step=1, chunk={"type": "text-delta", "text": "Hi", "index": 0}),
     E("assistant/message", turn=1, step=1, usage={"out": 1},
       message={"id": "a1", "role": "assistant", "content": [{"type": "text", "text": "Hi", "cache": True}]}),
     se(1, 1), E("turn/end", turn=1, reason={"kind": "completed", "detail": "ok"})],
    True,
    header={**HEADER, "cwd": "/home/ada/project"},
)

valid(
    "other-chunk-types",
    "Chunk types other than text-delta, tool-call and finish only need a string type.",
    [*opening(), E("assistant/chunk", turn=1, step=1, chunk={"type": "reasoning-delta", "text": "hmm"}),
     delta(1, 1, "Yes."), E("assistant/chunk", turn=1, step=1, chunk={"type": "usage", "inputTokens": 12}),
     finish(1, 1), amsg(1, 1, text("Yes.")), se(1, 1), te(1)],
    True,
)

valid(
    "tool-failures",
    "TOOL_FAILED, and an error result without a code, are both fine after dispatch.",
    [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "missing"})), call(1, 1, "c1"),
     res(1, 1, "c1", "exit status 2", "TOOL_FAILED"), call(1, 1, "c2", "read_file", {"path": "missing"}),
     res(1, 1, "c2", "no such file", is_error=True), se(1, 1), ss(1, 2),
     amsg(1, 2, text("Both failed.")), se(1, 2), te(1)],
    True,
)

valid(
    "turn-without-claim-or-input",
    "Nothing requires a turn to claim or a step to have input (a turn woken by other work).",
    [ts(1), ss(1, 1), amsg(1, 1, text("Tick.")), se(1, 1), te(1)],
    True,
)

valid(
    "esc-between-claim-and-step",
    "Steps 2's input was claimed after step 1 ended, then Esc came before step/start: claims "
    "may happen after the last step, while no step is open (I19).",
    [*opening(), ins("next-step", m("m2", "steer")), amsg(1, 1, text("Done.")), se(1, 1),
     claim("next-step"), te(1, "aborted")],
    True,
)

valid(
    "message-id-reused-after-claim",
    "Message ids need only be unique among queued messages (I18): m1 may be queued again.",
    [*text_turn(1, "m1"), ins("next-turn", m("m1"))],
    True,
)

valid(
    "replacement-splice",
    "A canceled splice that removes m2 and inserts m3 at the same place (an edit of a queued message).",
    [ins("next-turn", m("m1"), m("m2")), drop("next-turn", 1, 1, m("m3"))],
    True,
)

valid(
    "splices-in-the-middle",
    "Inserts and removals at inner positions of a queue.",
    [ins("next-turn", m("m1"), m("m3")), ins("next-turn", m("m2"), start=1),
     drop("next-turn", 2, 1), ins("next-turn", m("m4"), start=1)],
    True,
)

valid(
    "claim-several-next-step",
    "A next-step claim takes every queued steer at once.",
    [*opening(), ins("next-step", m("s1", "steer")), ins("next-step", m("s2", "steer"), start=1),
     amsg(1, 1, text("Ok.")), se(1, 1), claim("next-step", 2), ss(1, 2), user(1, 2, m("s1", "steer")),
     user(1, 2, m("s2", "steer")), amsg(1, 2, text("Both noted.")), se(1, 2), te(1)],
    True,
)

valid(
    "arguments-equal-as-json",
    "tool/call repeats its block's arguments as the same JSON value: key order does not matter, "
    "nulls and nesting are free inside arguments, numbers compare by value (2 and 2.0).",
    [*opening(),
     amsg(1, 1, tc("c1", "query", {"limit": 2, "filter": None, "tags": ["a", {"deep": True}]})),
     E("tool/call", turn=1, step=1, callId="c1", name="query",
       arguments={"tags": ["a", {"deep": True}], "filter": None, "limit": 2.0}),
     res(1, 1, "c1", "[]"), se(1, 1), te(1)],
    True,
)

valid(
    "unicode-text",
    "Text fields carry any Unicode; lines are UTF-8.",
    [*opening(), delta(1, 1, "Grüße 👋"), amsg(1, 1, text("Grüße 👋"), tc("c1")), call(1, 1, "c1"),
     out(1, 1, "c1", "naïve → ok\n", "stderr"), res(1, 1, "c1", "naïve → ok"), se(1, 1), te(1)],
    True,
)

valid(
    "many-turns-all-kinds",
    "Turns 1-5 end completed, max-tokens, blocked, error and aborted; numbering continues.",
    [*text_turn(1, "m1"),
     ts(2), ss(2, 1), amsg(2, 1, text("Long")), se(2, 1), te(2, "max-tokens"),
     ts(3), te(3, "blocked"),
     ts(4), ss(4, 1), se(4, 1), te(4, "error"),
     ts(5), te(5, "aborted")],
    True,
)

valid(
    "two-tool-steps-with-approval-in-second",
    "Steps are numbered 1, 2, 3 within the turn; approval ids and call ids are unique in the log.",
    [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), se(1, 1),
     ss(1, 2), amsg(1, 2, tc("c2", "bash", SLEEP)), asked(1, 2, "ap1", "c2", "bash"),
     decided(1, 2, "ap1", "allowed"), call(1, 2, "c2", "bash", SLEEP), res(1, 2, "c2", "slept"),
     se(1, 2), ss(1, 3), amsg(1, 3, text("Done.")), se(1, 3), te(1)],
    True,
)

valid(
    "inbox-between-turns-and-inside-steps",
    "Non-claim splices may appear anywhere: between turns, inside a step, between steps.",
    [ins("next-turn", m("m1")), ts(1), ins("next-turn", m("m2"), start=1), claim(), ss(1, 1),
     drop("next-turn"), user(1, 1, m("m1")), se(1, 1), ins("next-step", m("m3")), te(1),
     drop("next-step")],
    True,
)

valid("approval-id-equals-call-id", "Tool-call ids and approval ids are two separate "
      "uniqueness sets (I10 and I12): an approval may carry the id of the call it asks about. "
      "A checker that keeps one set for both kinds rejects this log.",
      [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "c1", "c1"), decided(1, 1, "c1", "allowed"),
       call(1, 1, "c1"), res(1, 1, "c1", "contents"), se(1, 1), te(1)], True)
valid("replacement-keeps-its-id", "A canceled splice may insert a message with the id of one it "
      "removes (an edit in place): the ids a splice removes are excepted from I18's uniqueness.",
      [ins("next-turn", m("m1")),
       E("agent/inbox/spliced", target="next-turn", start=0, removedCount=1,
         inserted=[{"id": "m1", "text": "please handle m1, edited", "source": "user"}],
         outcome="canceled")], True)
valid("duplicate-keys-last-wins", "A JSON object with a repeated key means what its last "
      "occurrence says (log.md §Values): here seq 5 then seq 0, and turn 2 then turn 1. Writers "
      "never repeat a key; readers agree on what a repeated one means.",
      ['{"seq":5,"seq":0,"time":1000,"type":"turn/start","data":{"turn":2,"turn":1}}'], False)


# ===========================================================================================
# invalid/ (the offending event is the last line unless noted)
# ===========================================================================================

# I0: format ---------------------------------------------------------------------------------
invalid("unknown-type", "tool/started is not a v1 event type.",
        [*opening(), E("tool/started", turn=1, step=1, callId="c1")], "I0")
invalid("missing-data-field", "turn/start without turn.", [E("turn/start")], "I0")
invalid("spawned-unknown-containment",
        "tool/spawned's optional containment is pid-namespace or process-group; any other value "
        "breaks I0 (spec/log.md).",
        [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
         spawned(1, 1, "c1", containment="cgroup")], "I0")
invalid("spawned-empty-owner",
        "tool/spawned's optional owner is a non-empty string; an empty one breaks I0.",
        [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
         spawned(1, 1, "c1", owner="")], "I0")
invalid("extra-envelope-key", "DSH's surfaceOp is not an envelope key of v1.",
        ['{"seq":0,"time":1000,"type":"turn/start","data":{"turn":1},"surfaceOp":"append"}'], "I0")
invalid("missing-envelope-key", "An event without time.",
        ['{"seq":0,"type":"turn/start","data":{"turn":1}}'], "I0")
invalid("seq-is-boolean", "true is not an integer; the report carries no seq.",
        ['{"seq":true,"time":1000,"type":"turn/start","data":{"turn":1}}'], "I0")
invalid("seq-with-fraction", "1.0 is not an integer in this format (log.md §Values), even though "
        "its value is integral; the report carries no seq. (JSON Schema alone accepts it.)",
        [ts(1), '{"seq":1.0,"time":1010,"type":"step/start","data":{"turn":1,"step":1}}'], "I0")
invalid("negative-seq", "seq -1 is an integer but not >= 0; it is reported as written.",
        ['{"seq":-1,"time":1000,"type":"turn/start","data":{"turn":1}}'], "I0")
invalid("negative-time", "time must be >= 0.", [at(ts(1), time=-5)], "I0")
invalid("turn-as-string", "turn \"1\" is a string, not an integer.",
        [E("turn/start", turn="1")], "I0")
invalid("turn-zero", "turns are numbered from 1.", [E("turn/start", turn=0)], "I0")
invalid("null-optional-field", "null is never valid: an optional field is absent or typed.",
        [*opening(), E("assistant/message", turn=1, step=1, message={"id": "a", "content": []},
                       interrupted=None)], "I0")
invalid("interrupted-false", "interrupted is only ever true.",
        [*opening(), E("assistant/message", turn=1, step=1, message={"id": "a", "content": []},
                       interrupted=False)], "I0")
invalid("removed-count-zero", "removedCount is omitted when 0, never written as 0.",
        [E("agent/inbox/spliced", target="next-turn", start=0, removedCount=0,
           inserted=[m("m1")])], "I0")
invalid("error-kind-without-error", "reason.error is required when kind is error.",
        [ts(1), E("turn/end", turn=1, reason={"kind": "error"})], "I0")
invalid("aborted-with-error", "reason.error is allowed only when kind is error.",
        [ts(1), E("turn/end", turn=1, reason={"kind": "aborted",
                                             "error": {"code": "X", "message": "y"}})], "I0")
invalid("unknown-reason-kind", "cancelled is not a turn/end kind (aborted is).",
        [ts(1), E("turn/end", turn=1, reason={"kind": "cancelled"})], "I0")
invalid("json-array-line", "A JSON line that is not an object is an I0 violation without a seq, "
        "not an unreadable line.", [ts(1), "[1,2,3]"], "I0")
invalid("type-not-a-string", "type must be a string; here an array.",
        ['{"seq":0,"time":1000,"type":["turn/start"],"data":{"turn":1}}'], "I0")
invalid("unknown-result-code", "TIMEOUT is not a result code.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "slow", "TIMEOUT")], "I0")
invalid("unknown-block-type", "Content blocks are text or tool-call only.",
        [*opening(), amsg(1, 1, {"type": "image", "url": "x.png"})], "I0")
invalid("dsh-approval-outcome", "allowed-once is DSH's outcome; v1 has allowed.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"),
         decided(1, 1, "ap1", "allowed-once")], "I0")
invalid("empty-message-id", "Message ids are non-empty strings.",
        [ins("next-turn", {"id": "", "text": "hi", "source": "user"})], "I0")
invalid("message-without-source", "A message is {id, text, source}.",
        [ins("next-turn", {"id": "m1", "text": "hi"})], "I0")
invalid("data-not-an-object", "data must be a JSON object.",
        ['{"seq":0,"time":1000,"type":"turn/start","data":[1]}'], "I0")
invalid("arguments-as-string", "tool/call arguments is an object, not DSH's raw string.",
        [*opening(), amsg(1, 1, tc("c1")),
         E("tool/call", turn=1, step=1, callId="c1", name="read_file", arguments='{"path":"notes.txt"}')],
        "I0")
invalid("stream-stdin", "stream is stdout or stderr.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), out(1, 1, "c1", "x", "stdin")], "I0")
invalid("is-error-as-string", "isError is a boolean.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "x", is_error="false")],  # type: ignore[arg-type]
        "I0")
invalid("block-arguments-missing", "A tool-call block always carries an arguments object.",
        [*opening(), amsg(1, 1, {"type": "tool-call", "id": "c1", "name": "read_file"})], "I0")
invalid("text-delta-without-text", "A text-delta chunk needs text.",
        [*opening(), E("assistant/chunk", turn=1, step=1, chunk={"type": "text-delta"})], "I0")
invalid("pgid-zero", "pgid is an integer >= 1.",
        [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
         spawned(1, 1, "c1", pgid=0)], "I0")
invalid("before-seq", "One event breaks I0 and I1 (seq 5 where 1 is due, and no turn field): "
        "format is checked first.", [ts(1), at(E("step/start", step=1), seq=5)], "I0")
invalid("finish-reason-not-a-string", "A finish chunk's reason is a string.",
        [*opening(), E("assistant/chunk", turn=1, step=1, chunk={"type": "finish", "reason": 1})], "I0")
invalid("tool-call-chunk-without-id", "A tool-call chunk carries id, name and arguments.",
        [*opening(), E("assistant/chunk", turn=1, step=1,
                       chunk={"type": "tool-call", "name": "read_file", "arguments": ARGS})], "I0")
invalid("tool-call-chunk-arguments-as-string", "A tool-call chunk's arguments is an object.",
        [*opening(), E("assistant/chunk", turn=1, step=1,
                       chunk={"type": "tool-call", "id": "c1", "name": "read_file", "arguments": "{}"})],
        "I0")
invalid("text-block-text-not-a-string", "A text block's text is a string.",
        [*opening(), amsg(1, 1, {"type": "text", "text": 5})], "I0")
invalid("user-message-without-text", "A user/message's message is {id, text, source}.",
        [*opening()[:4], user(1, 1, {"id": "m1", "source": "user"})], "I0")
invalid("splice-outcome-unknown", "A splice's outcome is only ever canceled.",
        [ins("next-turn", m("m1")),
         E("agent/inbox/spliced", target="next-turn", start=0, removedCount=1, inserted=[],
           outcome="discarded")], "I0")
invalid("empty-call-id", "callId is a non-empty string, like the block id it names: an empty "
        "callId is a format error (I0), not an unknown call (I14).",
        [*opening(), amsg(1, 1, tc("c1")), at(res(1, 1, "", "no", "DENIED"))], "I0")
invalid("empty-block-id", "A tool-call block id is a non-empty string.",
        [*opening(), amsg(1, 1, tc(""))], "I0")

# I1: seq --------------------------------------------------------------------------------------
invalid("first-seq-not-zero", "The first event must carry seq 0.", [at(ts(1), seq=1)], "I1")
invalid("gap", "seq jumps from 1 to 3; reported with the seq as written (3).",
        [ins("next-turn", m("m1")), ts(1), at(claim(), seq=3)], "I1")
invalid("repeat", "seq 1 written twice.", [ins("next-turn", m("m1")), ts(1), at(claim(), seq=1)], "I1")
invalid("before-structure", "A second turn/start while turn 1 is open, with the wrong seq: seq "
        "is checked before turn structure.", [ts(1), at(ts(2), seq=7)], "I1")

# I2: one turn at a time -------------------------------------------------------------------------
invalid("turn-start-while-open", "turn/start 2 while turn 1 is open.", [ts(1), ts(2)], "I2")
invalid("same-turn-twice", "turn/start 1 again while 1 is open breaks I2 (checked before I3).",
        [ins("next-turn", m("m1")), ts(1), claim(), ts(1)], "I2")
invalid("turn-start-inside-step", "A turn/start while a step of turn 1 is open.",
        [*opening(), ts(2)], "I2")

# I3: turn numbers -------------------------------------------------------------------------------
invalid("first-turn-is-two", "The first turn is numbered 1.", [ts(2)], "I3")
invalid("skips-a-number", "After turn 1 ends, the next turn is 2, not 3.", [*text_turn(1, "m1"), ts(3)], "I3")
invalid("reuses-ended-number", "turn/start 1 after turn 1 ended: I3 (turn/start is not subject to I7).",
        [*text_turn(1, "m1"), ts(1)], "I3")

# I4: turn/end names the open turn ---------------------------------------------------------------
invalid("names-other-turn", "turn/end 2 while turn 1 is open.", [ts(1), te(2)], "I4")
invalid("no-turn-open", "turn/end 1 in an empty log: no turn is open and 1 has not ended.", [te(1)], "I4")
invalid("names-future-turn-after-end", "turn/end 3 after turn 1 ended, none open.",
        [*text_turn(1, "m1"), te(3)], "I4")

# I5: step closes before turn --------------------------------------------------------------------
invalid("step-open", "turn/end while step 1 is open.", [*opening(), amsg(1, 1, text("x")), te(1)], "I5")
invalid("interrupted-with-step-open", "Closers in the wrong order: turn/end before step/end.",
        [*opening(), te(1, "interrupted")], "I5")

# I6: step structure ----------------------------------------------------------------------------
invalid("no-turn-open", "step/start before any turn/start.", [ss(1, 1)], "I6")
invalid("first-step-is-two", "Steps are numbered from 1 in each turn.", [ts(1), ss(1, 2)], "I6")
invalid("step-already-open", "step/start 2 while step 1 is open.", [*opening(), ss(1, 2)], "I6")
invalid("names-other-turn", "step/start names turn 2 while turn 1 is open.", [ts(1), ss(2, 1)], "I6")
invalid("skips-a-number", "Step 3 after step 1.", [ts(1), ss(1, 1), se(1, 1), ss(1, 3)], "I6")
invalid("restarts-numbering", "Steps do not restart inside a turn: step 1 again after step 1.",
        [ts(1), ss(1, 1), se(1, 1), ss(1, 1)], "I6")

# I7: no zombie writes ---------------------------------------------------------------------------
invalid("chunk-after-turn-end", "A chunk of turn 1 after turn 1 ended (no turn open).",
        [*text_turn(1, "m1"), delta(1, 1, "late")], "I7")
invalid("turn-end-twice", "turn/end 1 after turn 1 ended: I7, not I4.", [*text_turn(1, "m1"), te(1)], "I7")
invalid("result-into-next-turn", "A late tool/result of turn 1 while turn 2 is open.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "x", "ABORTED"),
         se(1, 1), te(1, "aborted"), ts(2), ss(2, 1), res(1, 1, "c1", "finally done")], "I7")
invalid("step-end-after-turn-end", "step/end of turn 1 after it ended.",
        [ts(1), ss(1, 1), se(1, 1), te(1), se(1, 1)], "I7")
invalid("step-start-of-ended-turn", "step/start naming turn 1 while turn 2 is open: I7, not I6.",
        [ts(1), te(1), ts(2), ss(1, 1)], "I7")

# I8: step scope -------------------------------------------------------------------------------
invalid("user-message-before-step", "user/message with the turn open but no step.",
        [ins("next-turn", m("m1")), ts(1), claim(), user(1, 1, m("m1"))], "I8")
invalid("chunk-names-other-step", "A chunk naming step 2 while step 1 is open.",
        [*opening(), delta(1, 2, "x")], "I8")
invalid("output-after-step-end", "tool/output after the call's step ended, turn still open.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), se(1, 1),
         out(1, 1, "c1", "late")], "I8")
invalid("user-message-between-turns", "A user/message for turn 2 before turn 2 started (DSH "
        "allowed user messages between turns; v1 does not).",
        [*text_turn(1, "m1"), user(2, 1, m("m2"))], "I8")
invalid("step-end-wrong-step", "step/end 2 while step 1 is open.", [ts(1), ss(1, 1), se(1, 2)], "I8")

# I9: order inside a step ------------------------------------------------------------------------
invalid("input-after-output", "user/message after the model began streaming.",
        [*opening(), delta(1, 1, "Hi"), user(1, 1, m("m2"))], "I9")
invalid("second-assistant-message", "Two assistant/messages in one step.",
        [*opening(), amsg(1, 1, text("One")), amsg(1, 1, text("Two"), mid="a2")], "I9")
invalid("interrupted-with-tool-call", "An interrupted message must not carry tool-call blocks.",
        [*opening(), amsg(1, 1, text("Let me"), tc("c1"), interrupted=True)], "I9")
invalid("chunk-after-interrupted", "Nothing streams after the interrupted message.",
        [*opening(), amsg(1, 1, text("Let"), interrupted=True), delta(1, 1, "me")], "I9")
invalid("chunk-after-message", "A chunk after the step's assistant/message.",
        [*opening(), amsg(1, 1, text("Hi")), delta(1, 1, "again")], "I9")
invalid("message-after-interrupted", "A completed message after an interrupted one in the same step.",
        [*opening(), amsg(1, 1, text("Le"), interrupted=True), amsg(1, 1, text("Let me"), mid="a2")], "I9")

# I10: unique call ids ---------------------------------------------------------------------------
invalid("id-reused-in-later-turn", "Turn 2 requests a call with turn 1's call id c1.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), se(1, 1), te(1),
         ts(2), ss(2, 1), amsg(2, 1, tc("c1"))], "I10")
invalid("id-twice-in-one-message", "One message requests two calls with the same id.",
        [*opening(), amsg(1, 1, tc("c1"), tc("c1", "read_file", {"path": "other"}))], "I10")
invalid("id-reused-in-next-step", "Step 2 reuses step 1's call id.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), se(1, 1), ss(1, 2),
         amsg(1, 2, tc("c1"))], "I10")

# I11: dispatch ---------------------------------------------------------------------------------
invalid("not-requested", "tool/call for an id no block of this step requested (DSH ignored "
        "such a tool/call during repair; v1 rejects it).",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c9")], "I11")
invalid("before-the-message", "tool/call before the assistant/message that requests it.",
        [*opening(), call_chunk(1, 1, "c1"), call(1, 1, "c1")], "I11")
invalid("dispatched-twice", "A second tool/call for c1.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), call(1, 1, "c1")], "I11")
invalid("arguments-differ", "tool/call must repeat its block's arguments.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1", "read_file", {"path": "other.txt"})], "I11")
invalid("name-differs", "tool/call must repeat its block's tool name.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1", "write_file")], "I11")
invalid("boolean-is-not-a-number", "Arguments are compared as JSON values: true is not 1.",
        [*opening(), amsg(1, 1, tc("c1", "query", {"verbose": True})),
         call(1, 1, "c1", "query", {"verbose": 1})], "I11")
invalid("after-its-result", "tool/call after the call was answered ABORTED_BEFORE_DISPATCH.",
        [*opening(), amsg(1, 1, tc("c1")), res(1, 1, "c1", "aborted", "ABORTED_BEFORE_DISPATCH"),
         call(1, 1, "c1")], "I11")
invalid("call-of-previous-step", "Step 2 dispatches a call requested in step 1.",
        [*opening(), amsg(1, 1, tc("c1")), res(1, 1, "c1", "no", "DENIED"), se(1, 1), ss(1, 2),
         call(1, 2, "c1")], "I11")
invalid("before-approval-check", "tool/call with wrong arguments while its approval is undecided: "
        "I11 is checked before I12.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"), call(1, 1, "c1", "read_file", {})],
        "I11")

# I12: approvals ----------------------------------------------------------------------------------
invalid("dispatch-while-undecided", "tool/call while the approval is still asked.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"), call(1, 1, "c1")], "I12")
invalid("dispatch-after-rejected", "A rejected call is never dispatched.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"), decided(1, 1, "ap1", "rejected"),
         call(1, 1, "c1")], "I12")
invalid("dispatch-after-cancelled", "A cancelled approval forbids dispatch too.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"), decided(1, 1, "ap1", "cancelled"),
         call(1, 1, "c1")], "I12")
invalid("asked-after-dispatch", "The approval bracket precedes the dispatch marker.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), asked(1, 1, "ap1", "c1")], "I12")
invalid("decided-unknown-id", "approval/decided for an id never asked.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"), decided(1, 1, "ap2", "allowed")], "I12")
invalid("decided-twice", "A second approval/decided for the same id.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"), decided(1, 1, "ap1", "allowed"),
         decided(1, 1, "ap1", "allowed")], "I12")
invalid("tool-name-differs", "approval/asked names another tool than the call's.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1", "bash")], "I12")
invalid("asked-for-unrequested-call", "approval/asked for a call this step did not request.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c2")], "I12")
invalid("approval-id-reused", "Approval ids are unique in the log.",
        [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})),
         asked(1, 1, "ap1", "c1"), decided(1, 1, "ap1", "allowed"), asked(1, 1, "ap1", "c2")], "I12")
invalid("second-approval-for-call", "A call has at most one approval.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"), decided(1, 1, "ap1", "rejected"),
         asked(1, 1, "ap2", "c1")], "I12")
invalid("decided-after-result", "approval/decided after the call's tool/result.",
        [*opening(), amsg(1, 1, tc("c1")), asked(1, 1, "ap1", "c1"),
         res(1, 1, "c1", "aborted", "ABORTED_BEFORE_DISPATCH"), decided(1, 1, "ap1", "cancelled")], "I12")

# I13: tool activity ------------------------------------------------------------------------------
invalid("output-before-call", "tool/output before the call's tool/call.",
        [*opening(), amsg(1, 1, tc("c1")), out(1, 1, "c1", "early")], "I13")
invalid("output-after-result", "tool/output after the call's tool/result.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), out(1, 1, "c1", "late")], "I13")
invalid("spawned-twice", "A call has at most one tool/spawned.",
        [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
         spawned(1, 1, "c1"), spawned(1, 1, "c1", pgid=4343)], "I13")
invalid("spawned-unknown-call", "tool/spawned for a call this step did not request.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), spawned(1, 1, "c2")], "I13")

# I14: one result ----------------------------------------------------------------------------------
invalid("second-result", "A second tool/result for c1.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), res(1, 1, "c1")], "I14")
invalid("unknown-call", "A tool/result for a call no block requested.",
        [*opening(), amsg(1, 1, tc("c1")), res(1, 1, "c2", "x", "DENIED")], "I14")
invalid("result-without-message", "A tool/result in a step that has no assistant/message.",
        [*opening(), res(1, 1, "c1", "x", "TOOL_NOT_STARTED")], "I14")
invalid("before-codes", "A second result that also has a bad code: I14 is checked before I15.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"),
         res(1, 1, "c1", "x", "DENIED")], "I14")

# I15: result codes follow the dispatch marker ---------------------------------------------------
invalid("success-without-dispatch", "An undispatched call cannot succeed.",
        [*opening(), amsg(1, 1, tc("c1")), res(1, 1, "c1", "ok")], "I15")
invalid("error-without-code-undispatched", "An undispatched call needs a not-dispatched code.",
        [*opening(), amsg(1, 1, tc("c1")), res(1, 1, "c1", "failed", is_error=True)], "I15")
invalid("aborted-without-dispatch", "ABORTED needs the dispatch marker; without it the code is "
        "ABORTED_BEFORE_DISPATCH.", [*opening(), amsg(1, 1, tc("c1")), res(1, 1, "c1", "x", "ABORTED")], "I15")
invalid("tool-failed-without-dispatch", "TOOL_FAILED needs the dispatch marker.",
        [*opening(), amsg(1, 1, tc("c1")), res(1, 1, "c1", "x", "TOOL_FAILED")], "I15")
invalid("before-dispatch-after-dispatch", "ABORTED_BEFORE_DISPATCH after tool/call (use ABORTED).",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "x", "ABORTED_BEFORE_DISPATCH")],
        "I15")
invalid("denied-after-dispatch", "DENIED after tool/call.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "x", "DENIED")], "I15")
invalid("not-started-after-dispatch", "TOOL_NOT_STARTED for a dispatched call.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1"))], "I15")
invalid("outcome-unknown-without-dispatch", "TOOL_OUTCOME_UNKNOWN for a call never dispatched.",
        [*opening(), amsg(1, 1, tc("c1")),
         placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c1"))], "I15")
invalid("code-with-is-error-false", "Any error code requires isError true.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "x", "ABORTED", is_error=False)],
        "I15")
invalid("before-placeholder-rule", "After a placeholder, a second placeholder written with "
        "isError false: I15 is checked before I17.",
        [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
         res(1, 1, "c2", not_started_text("read_file", "c2"), "TOOL_NOT_STARTED", is_error=False)], "I15")

# I16: every call answered ------------------------------------------------------------------------
invalid("unanswered-dispatched-call", "step/end while c1 (dispatched) has no result (DSH allowed this).",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), se(1, 1)], "I16")
invalid("unanswered-requested-call", "step/end while c1 (never dispatched) has no result.",
        [*opening(), amsg(1, 1, tc("c1")), se(1, 1)], "I16")
invalid("two-calls-one-answered", "step/end with c1 answered and c2 not.",
        [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})), call(1, 1, "c1"),
         res(1, 1, "c1"), se(1, 1)], "I16")
invalid("error-turn-leaves-call", "A scheduler failure must still answer its calls before step/end "
        "(cancel.md K16).", [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), se(1, 1), te(1, "error")],
        "I16", offender=-2)

# I17: placeholders belong to repair --------------------------------------------------------------
invalid("placeholder-then-completed", "A turn with a placeholder cannot end completed.",
        [*opening(), amsg(1, 1, tc("c1")),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
         se(1, 1), te(1)], "I17")
invalid("placeholder-then-aborted", "A turn with a placeholder cannot end aborted.",
        [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"),
         placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c1")),
         se(1, 1), te(1, "aborted")], "I17")
invalid("placeholder-then-new-step", "Nothing continues the turn after a placeholder.",
        [*opening(), amsg(1, 1, tc("c1")),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
         se(1, 1), ss(1, 2)], "I17")
invalid("placeholder-then-real-result", "After a placeholder, only placeholders may answer the "
        "step's other calls.",
        [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})), call(1, 1, "c1"),
         call(1, 1, "c2", "read_file", {"path": "b"}),
         placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c1")),
         res(1, 1, "c2", "bbb")], "I17")
invalid("placeholder-then-chunk", "A chunk after a placeholder breaks I17, which for step-scoped "
        "events is checked before I9.",
        [*opening(), amsg(1, 1, tc("c1")),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
         delta(1, 1, "more")], "I17")
invalid("placeholder-then-user-message", "A user/message after a placeholder breaks both I9 "
        "(the step is past its input phase) and I17; I17 is checked first.",
        [*opening(), amsg(1, 1, tc("c1")),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
         user(1, 1, m("m2"))], "I17")
invalid("placeholder-then-claim", "A claim after a placeholder (between steps) breaks I17.",
        [*opening(), ins("next-step", m("m2")), amsg(1, 1, tc("c1")),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
         se(1, 1), claim("next-step")], "I17")
invalid("placeholder-then-output", "tool/output of another dispatched call after a placeholder.",
        [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})),
         call(1, 1, "c2", "read_file", {"path": "b"}),
         placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")),
         out(1, 1, "c2", "bbb")], "I17")

# I18: the inbox projection -----------------------------------------------------------------------
invalid("no-op-splice", "A splice that removes and inserts nothing is never logged.",
        [ins("next-turn")], "I18")
invalid("remove-from-empty", "Removing one message from an empty queue.", [drop("next-turn")], "I18")
invalid("start-past-end", "Inserting at 1 into an empty queue.", [ins("next-turn", m("m1"), start=1)], "I18")
invalid("remove-past-end", "Removing 2 messages from position 1 of a 2-message queue.",
        [ins("next-turn", m("m1"), m("m2")), drop("next-turn", 2, 1)], "I18")
invalid("duplicate-id-other-queue", "m1 is already queued on next-turn; ids are unique across both queues.",
        [ins("next-turn", m("m1")), ins("next-step", m("m1"))], "I18")
invalid("duplicate-id-in-one-insert", "One splice inserting m1 twice.",
        [ins("next-turn", m("m1"), m("m1"))], "I18")
invalid("outcome-without-removal", "outcome canceled requires a removal.",
        [E("agent/inbox/spliced", target="next-turn", start=0, inserted=[m("m1")], outcome="canceled")], "I18")
invalid("claim-from-empty-queue", "A claim that passes I19 but finds next-turn empty.",
        [ts(1), claim()], "I18")

# I19: claims -----------------------------------------------------------------------------------
invalid("claim-outside-turn", "A claim with no turn open.", [ins("next-turn", m("m1")), claim()], "I19")
invalid("claim-inside-step", "A claim while step 1 is open.",
        [*opening(), ins("next-step", m("m2")), claim("next-step")], "I19")
invalid("claim-two-next-turn", "A next-turn claim takes exactly one message.",
        [ins("next-turn", m("m1"), m("m2")), ts(1), claim("next-turn", 2)], "I19")
invalid("claim-not-from-head", "A claim takes from the head of its queue.",
        [ins("next-turn", m("m1"), m("m2")), ts(1),
         E("agent/inbox/spliced", target="next-turn", start=1, removedCount=1, inserted=[])], "I19")
invalid("claim-that-inserts", "A removal without outcome that also inserts is not a valid claim.",
        [ins("next-turn", m("m1")), ts(1),
         E("agent/inbox/spliced", target="next-turn", start=0, removedCount=1, inserted=[m("m2")])], "I19")
invalid("before-projection", "A claim outside a turn on an empty queue: I19 before I18.", [claim()], "I19")

# ===========================================================================================
# unreadable/
# ===========================================================================================


def unreadable(cid: str, description: str, log: list[str], line: int, torn: str | None = None) -> None:
    extra: dict[str, Any] = {"raw_log": log}
    if torn is not None:
        extra["torn"] = torn
    case(f"unreadable/{cid}", description, [], {"unreadable": True, "line": line}, **extra)


EV0 = dumps({"seq": 0, "time": 1000, "type": "turn/start", "data": {"turn": 1}})
H = dumps(HEADER)

unreadable("empty-file", "An empty file has no header.", [], 1)
unreadable("header-torn", "The only bytes are a header without its newline: no complete header line.",
           [], 1, torn=H)
unreadable("no-header", "The first line is an event, not a header.", [EV0], 1)
unreadable("foreign-header", "A JSON object whose type is not session.",
           [dumps({"type": "conversation", "version": 1, "id": "x", "createdAt": 0})], 1)
unreadable("version-2", "A newer format version is refused, not guessed at.",
           [dumps({**HEADER, "version": 2}), EV0], 1)
unreadable("version-0", "DSH's version 0 is not v1.", [dumps({**HEADER, "version": 0})], 1)
unreadable("version-string", "version must be the integer 1.", [dumps({**HEADER, "version": "1"})], 1)
unreadable("version-true", "true is not the integer 1.", [dumps({**HEADER, "version": True})], 1)
unreadable("empty-id", "id must be a non-empty string.", [dumps({**HEADER, "id": ""})], 1)
unreadable("missing-created-at", "createdAt is required.",
           [dumps({"type": "session", "version": 1, "id": "vec"})], 1)
unreadable("negative-created-at", "createdAt must be >= 0.", [dumps({**HEADER, "createdAt": -1})], 1)
unreadable("header-not-json", "The first line is not JSON.", ["session v1"], 1)
unreadable("header-array", "The first line is JSON but not an object.", ["[]"], 1)
unreadable("line-not-json", "A complete line in the middle that is not JSON makes the file "
           "unreadable (exit 2), not invalid.",
           render([ins("next-turn", m("m1")), ts(1)]) + ['{"seq":2,"time":1020,"type":"agent/inbox/spl'], 4)
unreadable("empty-line", "An empty complete line is not JSON.", render([ts(1)]) + [""], 3)
unreadable("trailing-empty-line", "A file ending in two newlines ends with an empty complete line.",
           render(text_turn(1, "m1")) + [""], 11)
unreadable("nul-bytes", "NUL bytes where a line should be (a crash on a file system that does "
           "not order data writes): not JSON.", render([ts(1)]) + ["\u0000\u0000\u0000\u0000"], 3)
unreadable("lone-surrogate", "An escaped lone surrogate is not JSON text a reader accepts: "
           "the line is unreadable (log.md §Torn tail).",
           render([ts(1)]) + ['{"seq":1,"time":1010,"type":"step/start","data":{"turn":1,"step":1,"x":"\\ud800"}}'], 3)
unreadable("byte-order-mark", "A UTF-8 byte order mark before the header: the first line is not "
           "JSON.", ["\ufeff" + H, EV0], 1)
unreadable("nan", "NaN is not JSON, although some JSON libraries accept it by default.",
           render([ts(1)]) + ['{"seq":1,"time":NaN,"type":"step/start","data":{"turn":1,"step":1}}'], 3)
unreadable("infinity", "Infinity is not JSON either.",
           render([ts(1)]) + ['{"seq":1,"time":Infinity,"type":"step/start","data":{"turn":1,"step":1}}'], 3)
case("unreadable/invalid-utf8", "A byte that is not UTF-8 (0xff inside a string) makes its line "
     "unreadable. The file cannot be written as JSON strings, so it is given as file_hex.",
     [], {"unreadable": True, "line": 3}, raw_log=[],
     file_hex=(H + "\n" + EV0 + "\n").encode().hex()
     + b'{"seq":1,"time":1010,"type":"step/start","data":{"turn":1,"step":1,"x":"\xff"}}\n'.hex())

# ===========================================================================================
# repair/
# ===========================================================================================


def repair(cid: str, description: str, items: list[Any], closers: list[dict[str, Any]], balanced: bool,
           **extra: Any) -> None:
    case(f"repair/{cid}", description, items,
         {"valid": True, "balanced": balanced, "closers": closers}, **extra)


repair("empty-log", "An empty log gets no closers (R2).", [], [], True)
repair("balanced-log", "A balanced log gets no closers (R2).", text_turn(1, "m1"), [], True)

repair(
    "open-turn-no-step",
    "Open turn without a step: only turn/end interrupted, at seq last+1 with the last event's time.",
    [ins("next-turn", m("m1")), ts(1), claim()],  # seq 0-2, last time 1020
    [full(3, 1020, te(1, "interrupted"))],
    False,
)

repair(
    "open-step-streaming",
    "Open step, no calls: step/end then turn/end, contiguous seqs, same time.",
    [*opening(), delta(1, 1, "Part")],  # seq 0-5, last time 1050
    [full(6, 1050, se(1, 1)), full(7, 1050, te(1, "interrupted"))],
    False,
)

repair(
    "requested-not-dispatched",
    "The message requested c1 but no tool/call was written: TOOL_NOT_STARTED.",
    [*opening(), amsg(1, 1, tc("c1"))],  # seq 0-5
    [full(6, 1050, placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1"))),
     full(7, 1050, se(1, 1)), full(8, 1050, te(1, "interrupted"))],
    False,
)

repair(
    "dispatched-no-result",
    "kill -9 inside the body: tool/call is durable, the result is not: TOOL_OUTCOME_UNKNOWN.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
     spawned(1, 1, "c1"), out(1, 1, "c1", "tick\n")],  # seq 0-8, last time 1080
    [full(9, 1080, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1"))),
     full(10, 1080, se(1, 1)), full(11, 1080, te(1, "interrupted"))],
    False,
)

repair(
    "answered-call",
    "c1 has its result: no placeholder, just the step and turn ends.",
    [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1")],  # seq 0-7
    [full(8, 1070, se(1, 1)), full(9, 1070, te(1, "interrupted"))],
    False,
)

repair(
    "call-of-closed-step",
    "c1 belonged to step 1, which closed; the crash came between steps: only turn/end.",
    [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), se(1, 1)],  # seq 0-8
    [full(9, 1080, te(1, "interrupted"))],
    False,
)

repair(
    "earlier-turns-ignored",
    "Turn 1 is closed; only turn 2's unanswered call c2 gets a placeholder.",
    [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1"), se(1, 1), te(1),  # 0-9
     ts(2), ss(2, 1), amsg(2, 1, tc("c2", "bash", SLEEP)), call(2, 1, "c2", "bash", SLEEP)],  # 10-13
    [full(14, 1130, placeholder(2, 1, "c2", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c2"))),
     full(15, 1130, se(2, 1)), full(16, 1130, te(2, "interrupted"))],
    False,
)

repair(
    "two-calls-one-answered",
    "c1 answered, c2 dispatched and running: one placeholder, for c2.",
    [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})), call(1, 1, "c1"),
     call(1, 1, "c2", "read_file", {"path": "b"}), res(1, 1, "c1")],  # seq 0-8
    [full(9, 1080, placeholder(1, 1, "c2", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c2"))),
     full(10, 1080, se(1, 1)), full(11, 1080, te(1, "interrupted"))],
    False,
)

repair(
    "mixed-codes-in-request-order",
    "Three calls requested c1, c2, c3; c3 was dispatched first, c2 not at all, c1 later. "
    "Placeholders follow request order, each with the code its own dispatch marker decides.",
    [*opening(), amsg(1, 1, tc("c1", "read_file", {"path": "a"}), tc("c2", "read_file", {"path": "b"}),
                       tc("c3", "bash", SLEEP)),
     call(1, 1, "c3", "bash", SLEEP), call(1, 1, "c1", "read_file", {"path": "a"})],  # seq 0-7
    [full(8, 1070, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c1"))),
     full(9, 1070, placeholder(1, 1, "c2", "TOOL_NOT_STARTED", not_started_text("read_file", "c2"))),
     full(10, 1070, placeholder(1, 1, "c3", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c3"))),
     full(11, 1070, se(1, 1)), full(12, 1070, te(1, "interrupted"))],
    False,
)

repair(
    "repaired-log-gets-nothing",
    "Repairing a repaired log yields nothing (R6, idempotence).",
    [*opening(), amsg(1, 1, tc("c1")),
     at(placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")), time=1050),
     at(se(1, 1), time=1050), at(te(1, "interrupted"), time=1050)],
    [],
    True,
)

repair(
    "crash-during-repair-after-first-placeholder",
    "Repair died after its first closer: repairing again gives exactly the remaining closers, with "
    "the seqs and time the first repair would have used (R6).",
    [*opening(), amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})), call(1, 1, "c1"),  # 0-6
     at(placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c1")), time=1060)],  # 7
    [full(8, 1060, placeholder(1, 1, "c2", "TOOL_NOT_STARTED", not_started_text("read_file", "c2"))),
     full(9, 1060, se(1, 1)), full(10, 1060, te(1, "interrupted"))],
    False,
)

repair(
    "crash-during-repair-after-step-end",
    "Repair died after step/end: only turn/end remains.",
    [*opening(), amsg(1, 1, tc("c1")),  # 0-5
     at(placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("read_file", "c1")), time=1050),
     at(se(1, 1), time=1050)],  # 6-7
    [full(8, 1050, te(1, "interrupted"))],
    False,
)

repair(
    "stopped-process-group",
    "Recovery found c1's process group alive and stopped it (stopped: [c1]): the placeholder text "
    "gets the R5 suffix; the code is unchanged.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
     spawned(1, 1, "c1")],  # seq 0-7
    [full(8, 1070, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + STOPPED)),
     full(9, 1070, se(1, 1)), full(10, 1070, te(1, "interrupted"))],
    False,
    stopped=["c1"],
)

repair(
    "stopped-only-affects-named-calls",
    "Two running calls; only c2's group was still alive. c1's text has no suffix.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP), tc("c2", "bash", {"command": "make"})),
     call(1, 1, "c1", "bash", SLEEP), spawned(1, 1, "c1", 100), call(1, 1, "c2", "bash", {"command": "make"}),
     spawned(1, 1, "c2", 200)],  # seq 0-9
    [full(10, 1090, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1"))),
     full(11, 1090, placeholder(1, 1, "c2", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c2") + STOPPED)),
     full(12, 1090, se(1, 1)), full(13, 1090, te(1, "interrupted"))],
    False,
    stopped=["c2"],
)

repair(
    "stopped-ignores-undispatched-call",
    "stopped names c2, which was never dispatched (no tool/call, so no process group could have "
    "been stopped): R5 applies to dispatched calls only, so c2's TOOL_NOT_STARTED text has no "
    "suffix, while c1's has it.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP), tc("c2", "bash", {"command": "make"})),
     call(1, 1, "c1", "bash", SLEEP), spawned(1, 1, "c1", 100)],  # seq 0-7
    [full(8, 1070, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + STOPPED)),
     full(9, 1070, placeholder(1, 1, "c2", "TOOL_NOT_STARTED", not_started_text("bash", "c2"))),
     full(10, 1070, se(1, 1)), full(11, 1070, te(1, "interrupted"))],
    False,
    stopped=["c1", "c2"],
)

repair(
    "other-host-process-group",
    "c1's group was started under boot id A; recovery runs with boot id B (bootId), so it cannot "
    "stop the group or see whether it ended: R5's other-host sentence, naming A, follows the "
    "TOOL_OUTCOME_UNKNOWN text; the code is unchanged.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
     spawned(1, 1, "c1", 4242, f"{BOOT_A}:81234:9f2c4e1a7b3d5068"), out(1, 1, "c1", "tick\n")],  # seq 0-8
    [full(9, 1080, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + other_host(BOOT_A))),
     full(10, 1080, se(1, 1)), full(11, 1080, te(1, "interrupted"))],
    False,
    bootId=BOOT_B,
)

repair(
    "same-boot-process-group",
    "The same log recovered on the host and boot that started c1 (bootId is A) and the group was "
    "not found running: no sentence, exactly as without a boot id.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP),
     spawned(1, 1, "c1", 4242, f"{BOOT_A}:81234:9f2c4e1a7b3d5068"), out(1, 1, "c1", "tick\n")],  # seq 0-8
    [full(9, 1080, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1"))),
     full(10, 1080, se(1, 1)), full(11, 1080, te(1, "interrupted"))],
    False,
    bootId=BOOT_A,
)

repair(
    "other-host-only-affects-its-call",
    "Recovery with boot id B: c1 ran under A (other-host sentence); c2 ran under A too but is "
    "listed as stopped (the stopped sentence wins: the store did stop it); c3 ran under B (no "
    "sentence); c4's identity is not '<boot_id>:<starttime>[:<marker>]' (no sentence); c5 never "
    "logged tool/spawned (no sentence).",
    [*opening(),
     amsg(1, 1, tc("c1", "bash", SLEEP), tc("c2", "bash", {"command": "make"}), tc("c3", "bash", {"command": "ls"}),
          tc("c4", "bash", {"command": "pwd"}), tc("c5", "read_file")),  # seq 5
     call(1, 1, "c1", "bash", SLEEP), spawned(1, 1, "c1", 100, f"{BOOT_A}:500:00000000000000a1"),  # 6-7
     call(1, 1, "c2", "bash", {"command": "make"}), spawned(1, 1, "c2", 200, f"{BOOT_A}:501:00000000000000a2"),  # 8-9
     call(1, 1, "c3", "bash", {"command": "ls"}), spawned(1, 1, "c3", 300, f"{BOOT_B}:502:00000000000000a3"),  # 10-11
     call(1, 1, "c4", "bash", {"command": "pwd"}), spawned(1, 1, "c4", 400),  # 12-13
     call(1, 1, "c5")],  # seq 14
    [full(15, 1140, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + other_host(BOOT_A))),
     full(16, 1140, placeholder(1, 1, "c2", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c2") + STOPPED)),
     full(17, 1140, placeholder(1, 1, "c3", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c3"))),
     full(18, 1140, placeholder(1, 1, "c4", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c4"))),
     full(19, 1140, placeholder(1, 1, "c5", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c5"))),
     full(20, 1140, se(1, 1)), full(21, 1140, te(1, "interrupted"))],
    False,
    stopped=["c2"],
    bootId=BOOT_B,
)

OWNER = f"{BOOT_A}:3100:81000"  # the runtime that started the calls below
NS_CALLS = [
    *opening(),
    amsg(1, 1, tc("c1", "bash", SLEEP), tc("c2", "bash", {"command": "make"}),
         tc("c3", "bash", {"command": "ls"}), tc("c4", "bash", {"command": "pwd"})),  # seq 5
    call(1, 1, "c1", "bash", SLEEP),  # 6
    spawned(1, 1, "c1", 100, f"{BOOT_A}:500:00000000000000a1", containment="pid-namespace", owner=OWNER),
    call(1, 1, "c2", "bash", {"command": "make"}),  # 8
    spawned(1, 1, "c2", 200, f"{BOOT_A}:501:00000000000000a2", containment="pid-namespace", owner=OWNER),
    call(1, 1, "c3", "bash", {"command": "ls"}),  # 10
    spawned(1, 1, "c3", 300, f"{BOOT_A}:502:00000000000000a3", containment="process-group", owner=OWNER),
    call(1, 1, "c4", "bash", {"command": "pwd"}),  # 12
    spawned(1, 1, "c4", 400, f"{BOOT_A}:503:00000000000000a4", containment="process-group", owner=OWNER),
]  # seq 0-13, last time 1130

repair(
    "reaped-kinds",
    "Recovery reports one R5 kind per call (reaped): c1 namespace-gone, c2 namespace-ended, c3 "
    "stopped, c4 owner-running; each placeholder gets that kind's sentence, the codes are "
    "unchanged. The optional containment and owner of tool/spawned change nothing by themselves.",
    NS_CALLS,
    [full(14, 1130, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + REAPED["namespace-gone"])),
     full(15, 1130, placeholder(1, 1, "c2", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c2") + REAPED["namespace-ended"])),
     full(16, 1130, placeholder(1, 1, "c3", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c3") + REAPED["stopped"])),
     full(17, 1130, placeholder(1, 1, "c4", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c4") + REAPED["owner-running"])),
     full(18, 1130, se(1, 1)), full(19, 1130, te(1, "interrupted"))],
    False,
    reaped={"c1": "namespace-gone", "c2": "namespace-ended", "c3": "stopped", "c4": "owner-running"},
)

repair(
    "reaped-wins-over-other-host",
    "Recovery with boot id B: c1..c4 ran under A. c3 is reaped as owner-running (its sentence, not "
    "the other-host one: a reaped call is this host's); the others, not reaped, get the "
    "other-host sentence naming A.",
    NS_CALLS,
    [full(14, 1130, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + other_host(BOOT_A))),
     full(15, 1130, placeholder(1, 1, "c2", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c2") + other_host(BOOT_A))),
     full(16, 1130, placeholder(1, 1, "c3", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c3") + REAPED["owner-running"])),
     full(17, 1130, placeholder(1, 1, "c4", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c4") + other_host(BOOT_A))),
     full(18, 1130, se(1, 1)), full(19, 1130, te(1, "interrupted"))],
    False,
    reaped={"c3": "owner-running"},
    bootId=BOOT_B,
)

repair(
    "interrupted-message-open-step",
    "The stream was cancelled and the prefix saved, then the process died before step/end.",
    [*opening(), delta(1, 1, "Hal"), amsg(1, 1, text("Hal"), interrupted=True)],  # seq 0-6
    [full(7, 1060, se(1, 1)), full(8, 1060, te(1, "interrupted"))],
    False,
)

repair(
    "waiting-for-approval",
    "kill -9 while the user was being asked: the body provably never ran, so TOOL_NOT_STARTED "
    "(the reason tool/call is written after approval). The open approval stays open.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), asked(1, 1, "ap1", "c1", "bash")],  # seq 0-6
    [full(7, 1060, placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("bash", "c1"))),
     full(8, 1060, se(1, 1)), full(9, 1060, te(1, "interrupted"))],
    False,
)

repair(
    "approved-not-yet-dispatched",
    "Allowed but tool/call not yet durable: still TOOL_NOT_STARTED.",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), asked(1, 1, "ap1", "c1", "bash"),
     decided(1, 1, "ap1", "allowed")],  # seq 0-7
    [full(8, 1070, placeholder(1, 1, "c1", "TOOL_NOT_STARTED", not_started_text("bash", "c1"))),
     full(9, 1070, se(1, 1)), full(10, 1070, te(1, "interrupted"))],
    False,
)

repair(
    "aborted-result-step-open",
    "Esc answered c1 ABORTED, then the process died before step/end: no placeholder.",
    [*opening(), amsg(1, 1, tc("c1")), call(1, 1, "c1"), res(1, 1, "c1", "aborted", "ABORTED")],  # 0-7
    [full(8, 1070, se(1, 1)), full(9, 1070, te(1, "interrupted"))],
    False,
)

repair(
    "closers-use-last-time-not-max",
    "Times went backwards; closers reuse the time of the last event (900), not the largest.",
    [at(ins("next-turn", m("m1")), time=5000), at(ts(1), time=5001), at(claim(), time=900)],
    [full(3, 900, te(1, "interrupted"))],
    False,
)

repair(
    "trailing-splice-sets-time",
    "The last event is an inbox insert made while the turn ran; its seq and time are what the "
    "closers continue from.",
    [*opening(), ins("next-turn", m("m2")), at(ins("next-step", m("m3")), time=7777)],  # seq 0-6
    [full(7, 7777, se(1, 1)), full(8, 7777, te(1, "interrupted"))],
    False,
)

repair(
    "open-turn-after-claim-between-steps",
    "Step 1 ended, the steer was claimed, the crash came before step/start 2: only turn/end.",
    [*opening(), ins("next-step", m("m2")), amsg(1, 1, text("Ok")), se(1, 1), claim("next-step")],  # 0-8
    [full(9, 1080, te(1, "interrupted"))],
    False,
)

repair(
    "second-turn-no-step-after-repaired-turn",
    "A log already repaired once crashed again in turn 2: turn 2 is closed the same way.",
    [ins("next-turn", m("m1")), ins("next-turn", m("m2"), start=1), ts(1), claim(),
     te(1, "interrupted"), ts(2), claim()],  # seq 0-6
    [full(7, 1060, te(2, "interrupted"))],
    False,
)

# ===========================================================================================
# fold/  (spec/consumed-work.md C1-C5)
# ===========================================================================================


def fold(cid: str, description: str, items: list[Any], end_seq: int | None, dropped: bool,
         balanced: bool | None = True) -> None:
    expect: dict[str, Any] = {"fold": {"end_seq": end_seq, "dropped_unrun": dropped}}
    extra: dict[str, Any] = {}
    if balanced is None:
        extra["suffix"] = True
    else:
        expect = {"valid": True, "balanced": balanced, **expect}
    case(f"fold/{cid}", description, items, expect, **extra)


fold("empty", "Nothing at all: no end, nothing dropped.", [], None, False)
fold("only-inserts", "Only inserts, no turns: no end, nothing dropped (C3).",
     [ins("next-turn", m("m1")), ins("next-step", m("m2"))], None, False)
fold("latest-stepped-turn-wins", "Two stepped turns; the later one (max-tokens) is the end.",
     [*text_turn(1, "m1"), ts(2), ss(2, 1), amsg(2, 1, text("Long")), se(2, 1), te(2, "max-tokens")],
     13, False)
fold("claim-then-error", "Claimed, no step, ended error: accounts (C4).",
     [ins("next-turn", m("m1")), ts(1), claim(), te(1, "error")], 3, False)
fold("claim-then-aborted", "Claimed, no step, ended aborted: accounts.",
     [ins("next-turn", m("m1")), ts(1), claim(), te(1, "aborted")], 3, False)
fold("claim-then-blocked", "Claimed, no step, ended blocked: accounts.",
     [ins("next-turn", m("m1")), ts(1), claim(), te(1, "blocked")], 3, False)
fold("claim-then-interrupted", "A claimed turn closed by repair accounts: the claim is final.",
     [ins("next-turn", m("m1")), ts(1), claim(), te(1, "interrupted")], 3, False)
fold("no-claim-no-step-ignored", "Turns with neither claim nor step do not account, "
     "whatever their kind; the earlier stepped turn stays the end.",
     [*text_turn(1, "m1"), ts(2), te(2, "aborted"), ts(3), te(3, "error"), ts(4), te(4, "blocked")],
     8, False)
fold("claim-emptied-completed", "Claimed, no step, completed (the batch was rewritten to "
     "nothing): does not account.", [ins("next-turn", m("m1")), ts(1), claim(), te(1)], None, False)
fold("stepped-completed-without-claim", "A stepped turn accounts even with no claim.",
     [ts(1), ss(1, 1), se(1, 1), te(1)], 3, False)
fold("claim-without-open-turn", "A slice that starts mid-turn: the claim credits no turn "
     "and the turn/end does not account.",
     [at(claim(), seq=12), at(te(4, "error"), seq=13)], None, False, balanced=None)
fold("suffix-with-step", "A slice starting mid-turn that contains the step/start: the turn is "
     "stepped (C1 uses the number the event carries) and accounts.",
     [at(ss(4, 2), seq=20), at(se(4, 2), seq=21), at(te(4, "aborted"), seq=22)], 22, False, balanced=None)
fold("cancel-after-accounting-turn", "A message dropped after the last accounting turn.",
     [*text_turn(1, "m1"), ins("next-turn", m("m2")), drop("next-turn")], 8, True)
fold("replacement-is-not-a-drop", "Cancel plus insert (an edit) keeps work pending (C3).",
     [*text_turn(1, "m1"), ins("next-turn", m("m2")), drop("next-turn", 1, 0, m("m3"))], 8, False)
fold("later-accounting-turn-resets", "A drop, then a turn that accounts: the flag is reset.",
     [*text_turn(1, "m1"), ins("next-turn", m("m2")), drop("next-turn"), ins("next-turn", m("m3")),
      ts(2), claim(), te(2, "blocked")], 14, False)
fold("non-accounting-turn-keeps-flag", "A drop, then a turn that does not account (no claim, no "
     "step): the flag stays set.",
     [*text_turn(1, "m1"), ins("next-turn", m("m2")), drop("next-turn"), ts(2), te(2, "aborted")], 8, True)
fold("cancel-in-the-waking-tick", "cancel.md K2: the send and the cancel land in one tick; no "
     "turn starts and the message is dropped unrun.",
     [ins("next-turn", m("m1")), drop("next-turn")], None, True)
fold("esc-clears-queue-during-turn", "Esc during a stepped turn clears a queued followup; the "
     "aborted turn accounts after the drop, so the drop is that turn's story (C4).",
     [*opening(), ins("next-turn", m("m2")), drop("next-turn"), se(1, 1), te(1, "aborted")], 8, False)
fold("two-sends-one-cancel", "As v1 writes it: the first message's turn is already live "
     "and claimed, the cancel drops the second, and the claimed turn ends aborted without a step.",
     [ins("next-turn", m("m1")), ins("next-turn", m("m2"), start=1), ts(1), claim(),
      drop("next-turn"), te(1, "aborted")], 5, False)
fold("open-turn-at-end", "A stepped turn that has not ended yet does not account (yet).",
     [*text_turn(1, "m1"), ts(2), ss(2, 1)], 8, False, balanced=False)
fold("step-clear-is-a-drop", "Clearing next-step with a canceled splice is a drop too.",
     [*text_turn(1, "m1"), ins("next-step", m("s1"), m("s2")), drop("next-step", 2)], 8, True)

# ===========================================================================================
# truncate/
# ===========================================================================================


def truncate(cid: str, description: str, items: list[Any], report: dict[str, Any], balanced: bool) -> None:
    report.setdefault("forgottenMessages", 0)  # only the case below queues during the turn
    case(f"truncate/{cid}", description, items,
         {"valid": True, "balanced": balanced, "truncate": report})


def nothing(kept: int) -> dict[str, Any]:
    return {"turn": None, "keptEvents": kept, "droppedEvents": 0, "droppedByType": {},
            "streamedChars": 0, "toolOutputBytes": 0, "dispatchedCalls": [], "lostResults": [],
            "reclaimedMessages": 0}


truncate("empty-log", "Nothing to drop.", [], nothing(0), True)
truncate("balanced-log", "A balanced log drops nothing, even its last turn.", text_turn(1, "m1"), nothing(9), True)
truncate("repaired-log", "A repaired (balanced) log drops nothing.",
         [ins("next-turn", m("m1")), ts(1), claim(), te(1, "interrupted")], nothing(4), True)
truncate("open-turn-no-step", "The open turn and its claim go; the claim is put back.",
         [ins("next-turn", m("m1")), ts(1), claim()],
         {"turn": 1, "keptEvents": 1, "droppedEvents": 2,
          "droppedByType": {"turn/start": 1, "agent/inbox/spliced": 1},
          "streamedChars": 0, "toolOutputBytes": 0, "dispatchedCalls": [], "lostResults": [],
          "reclaimedMessages": 1}, False)
truncate(
    "mid-tool",
    "The demo's situation: streamed text and a running tool with output. Everything from turn/start "
    "2 on is dropped; turn 1 and the inserts before turn 2 are kept.",
    [*text_turn(1, "m1"), ins("next-turn", m("m2")),  # seq 0-9
     ts(2), claim(), ss(2, 1), user(2, 1, m("m2")), delta(2, 1, "Running "), delta(2, 1, "the build."),
     amsg(2, 1, text("Running the build."), tc("c1", "bash", {"command": "make"})),
     call(2, 1, "c1", "bash", {"command": "make"}), spawned(2, 1, "c1"),
     out(2, 1, "c1", "cc -c a.c\n"), out(2, 1, "c1", "cc -c b.c\n", "stderr")],  # seq 10-20
    {"turn": 2, "keptEvents": 10, "droppedEvents": 11,
     "droppedByType": {"turn/start": 1, "agent/inbox/spliced": 1, "step/start": 1, "user/message": 1,
                       "assistant/chunk": 2, "assistant/message": 1, "tool/call": 1, "tool/spawned": 1,
                       "tool/output": 2},
     "streamedChars": 18, "toolOutputBytes": 20, "dispatchedCalls": ["c1"], "lostResults": [],
     "reclaimedMessages": 1},
    False,
)
truncate(
    "code-points-and-bytes",
    "streamedChars counts Unicode code points (👋 is 1, though 2 UTF-16 units); toolOutputBytes "
    "counts UTF-8 bytes (é is 2, → is 3).",
    [ts(1), ss(1, 1), delta(1, 1, "hé👋"), amsg(1, 1, tc("c1")), call(1, 1, "c1"), out(1, 1, "c1", "é→")],
    {"turn": 1, "keptEvents": 0, "droppedEvents": 6,
     "droppedByType": {"turn/start": 1, "step/start": 1, "assistant/chunk": 1, "assistant/message": 1,
                       "tool/call": 1, "tool/output": 1},
     "streamedChars": 3, "toolOutputBytes": 5, "dispatchedCalls": ["c1"], "lostResults": [],
     "reclaimedMessages": 0},
    False,
)
truncate(
    "lost-results-and-steps",
    "A finished first step (results) and a second step are all dropped; only text-delta chunks "
    "count as streamed characters (not tool-call or finish chunks).",
    [ins("next-turn", m("m1")), ts(1), claim(), ss(1, 1), user(1, 1, m("m1")),
     call_chunk(1, 1, "c1"), call_chunk(1, 1, "c2", "read_file", {"path": "b"}), finish(1, 1, "tool-calls"),
     amsg(1, 1, tc("c1"), tc("c2", "read_file", {"path": "b"})), call(1, 1, "c1"),
     call(1, 1, "c2", "read_file", {"path": "b"}), res(1, 1, "c1", "aaa"), res(1, 1, "c2", "bbb"),
     se(1, 1), ss(1, 2), delta(1, 2, "ab")],
    {"turn": 1, "keptEvents": 1, "droppedEvents": 15,
     "droppedByType": {"turn/start": 1, "agent/inbox/spliced": 1, "step/start": 2, "user/message": 1,
                       "assistant/chunk": 4, "assistant/message": 1, "tool/call": 2, "tool/result": 2,
                       "step/end": 1},
     "streamedChars": 2, "toolOutputBytes": 0, "dispatchedCalls": ["c1", "c2"],
     "lostResults": ["c1", "c2"], "reclaimedMessages": 1},
    False,
)
truncate(
    "claims-counted-cancels-not",
    "reclaimedMessages sums the claims of the dropped turn (1 next-turn + 2 next-step); the "
    "canceled splice in the tail is not a claim.",
    [ins("next-turn", m("m1")), ins("next-step", m("s1"), m("s2")), ins("next-turn", m("m2"), start=1),
     ts(1), claim(), claim("next-step", 2), drop("next-turn")],
    {"turn": 1, "keptEvents": 3, "droppedEvents": 4,
     "droppedByType": {"turn/start": 1, "agent/inbox/spliced": 3},
     "streamedChars": 0, "toolOutputBytes": 0, "dispatchedCalls": [], "lostResults": [],
     "reclaimedMessages": 3},
    False,
)
truncate(
    "after-repaired-turn",
    "Turn 1 was repaired (kept); turn 2 is open and dropped.",
    [ins("next-turn", m("m1")), ts(1), claim(), te(1, "interrupted"), ts(2), ss(2, 1)],
    {"turn": 2, "keptEvents": 4, "droppedEvents": 2, "droppedByType": {"turn/start": 1, "step/start": 1},
     "streamedChars": 0, "toolOutputBytes": 0, "dispatchedCalls": [], "lostResults": [],
     "reclaimedMessages": 0},
    False,
)
truncate(
    "queued-during-turn-forgotten",
    "A follow-up queued while the tool ran (and a steer replaced by a cancel) is forgotten: "
    "forgottenMessages counts the inserted messages of dropped splices, replacement included.",
    [ins("next-turn", m("m1")), ts(1), claim(), ss(1, 1), user(1, 1, m("m1")),
     amsg(1, 1, tc("c1")), call(1, 1, "c1"), ins("next-turn", m("m2")), ins("next-step", m("s1"))],
    {"turn": 1, "keptEvents": 1, "droppedEvents": 8,
     "droppedByType": {"turn/start": 1, "agent/inbox/spliced": 3, "step/start": 1, "user/message": 1,
                       "assistant/message": 1, "tool/call": 1},
     "streamedChars": 0, "toolOutputBytes": 0, "dispatchedCalls": ["c1"], "lostResults": [],
     "reclaimedMessages": 1, "forgottenMessages": 2},
    False,
)
truncate(
    "inserts-after-last-end-kept",
    "Splices after the last turn/end with no open turn: balanced, nothing dropped.",
    [*text_turn(1, "m1"), ins("next-turn", m("m2")), drop("next-turn")],
    nothing(11),
    True,
)

# ===========================================================================================
# torn/
# ===========================================================================================


def torn(cid: str, description: str, items: list[Any], tail: str, expect: dict[str, Any]) -> None:
    """A file whose last bytes have no newline. Both the checker and a store ignore them."""
    n = len([i for i in items if not isinstance(i, str)])
    closers = expect.get("closers")
    damage: dict[str, Any] = {"damage": "torn-tail", "line": n + 2, "kept_events": n}
    if closers is not None:
        damage["closers"] = closers
    case(f"torn/{cid}", description, items, {**expect, "torn_tail": tail, "store": damage}, torn=tail)


torn("partial-event-after-balanced", "A half-written line after a balanced log is ignored.",
     text_turn(1, "m1"), '{"seq":9,"time":1090,"type":"agent/inbox/sp',
     {"valid": True, "balanced": True, "closers": []})
torn("partial-event-in-open-turn", "kill -9 mid-write inside a tool body: the torn line is ignored "
     "and the closers continue from the last complete event (seq 7, time 1070).",
     [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP), spawned(1, 1, "c1")],
     '{"seq":8,"time":1080,"type":"tool/output","data":{"turn":1,"step":1,"callId":"c1","stream":"std',
     {"valid": True, "balanced": False,
      "closers": [full(8, 1070, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1"))),
                  full(9, 1070, se(1, 1)), full(10, 1070, te(1, "interrupted"))]})
torn("complete-event-without-newline", "A valid turn/end without its newline is still torn: the "
     "turn is open, and repair closes it interrupted.",
     [ins("next-turn", m("m1")), ts(1), claim(), ss(1, 1), se(1, 1)],
     dumps({"seq": 5, "time": 1050, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}),
     {"valid": True, "balanced": False, "closers": [full(5, 1040, te(1, "interrupted"))]})
torn("garbage-bytes", "Non-JSON bytes after the last newline are a torn tail, not an unreadable line.",
     [ts(1)], "\u0000\u0000garbage", {"valid": True, "balanced": False,
                                      "closers": [full(1, 1000, te(1, "interrupted"))]})
torn("only-header", "A header line and a torn first event.", [], '{"seq":0,"ti',
     {"valid": True, "balanced": True, "closers": []})
torn("violation-hidden-in-tail", "The torn bytes would break a rule (seq 99) but are never read.",
     text_turn(1, "m1"), dumps({"seq": 99, "time": 0, "type": "turn/start", "data": {"turn": 7}}),
     {"valid": True, "balanced": True, "closers": []})


def store(cid: str, description: str, log: list[str], check: dict[str, Any], damage: dict[str, Any],
          tail: str | None = None) -> None:
    extra: dict[str, Any] = {"raw_log": log}
    if tail is not None:
        extra["torn"] = tail
    case(f"torn/{cid}", description, [], {**check, "store": damage}, **extra)


# A store's view (recovery.md §Torn tail and corruption). "store" names the class, the first
# damaged line, and for a torn tail how many events stay and the closers repair appends to
# them; the rest of expect is what the strict checker says about the same bytes.
TURN1 = render(text_turn(1, "m1"))  # lines 1-10: header, then seq 0-8; line 10 is turn/end
OPEN2 = [dumps({"seq": 9, "time": 1090, "type": "turn/start", "data": {"turn": 2}})]  # line 11
CLOSE2 = [full(10, 1090, te(2, "interrupted"))]

store("garbage-after-last-turn-end", "A non-JSON line after the last turn/end, then nothing: a "
      "torn tail for a store (cut at line 12, turn 2 is then closed); unreadable for the checker.",
      TURN1 + OPEN2 + ["\u0000\u0000\u0000"], {"unreadable": True, "line": 12},
      {"damage": "torn-tail", "line": 12, "kept_events": 10, "closers": CLOSE2})
store("seq-gap-after-last-turn-end", "A seq gap after the last turn/end: torn tail for a store; "
      "I1 for the checker.",
      TURN1 + OPEN2 + [dumps({"seq": 11, "time": 1110, "type": "step/start", "data": {"turn": 2, "step": 1}})],
      {"valid": False, "rule": "I1", "seq": 11, "line": 12},
      {"damage": "torn-tail", "line": 12, "kept_events": 10, "closers": CLOSE2})
store("garbage-then-lines-after-last-turn-end", "Everything from the damaged line on is dropped, "
      "including well-formed lines after it, as long as none is a turn/end.",
      TURN1 + OPEN2 + ["#!?", dumps({"seq": 10, "time": 1100, "type": "step/start", "data": {"turn": 2, "step": 1}})],
      {"unreadable": True, "line": 12},
      {"damage": "torn-tail", "line": 12, "kept_events": 10, "closers": CLOSE2})
store("garbage-before-turn-end", "A non-JSON line followed later by a turn/end: corruption.",
      render([ins("next-turn", m("m1")), ts(1)]) + ["{{{"] +
      [dumps({"seq": 2, "time": 1020, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}})],
      {"unreadable": True, "line": 4},
      {"damage": "corruption", "line": 4})
store("seq-gap-at-turn-end", "The damaged line is itself a well-formed turn/end with a seq gap: "
      "damage at a committed turn/end is corruption.",
      render([ins("next-turn", m("m1")), ts(1)]) +
      [dumps({"seq": 3, "time": 1030, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "blocked"}}})],
      {"valid": False, "rule": "I1", "seq": 3, "line": 4},
      {"damage": "corruption", "line": 4})
store("rule-breaking-turn-end-is-corruption", "A well-formed turn/end with the right seq that breaks "
      "I5 (a step is open): damage at a committed turn/end, so corruption, even though it is the "
      "last line.",
      TURN1 + OPEN2 + [dumps({"seq": 10, "time": 1100, "type": "step/start", "data": {"turn": 2, "step": 1}}),
                       dumps({"seq": 11, "time": 1110, "type": "turn/end",
                              "data": {"turn": 2, "reason": {"kind": "completed"}}})],
      {"valid": False, "rule": "I5", "seq": 11, "line": 13},
      {"damage": "corruption", "line": 13})
store("bad-event-then-torn", "An I0 line after the last turn/end, and a torn tail after it: the "
      "store cuts at the I0 line.",
      TURN1 + ['{"seq":9,"time":1090,"type":"turn/start","data":{}}'],
      {"valid": False, "rule": "I0", "seq": 9, "line": 11},
      {"damage": "torn-tail", "line": 11, "kept_events": 9, "closers": []}, tail='{"seq":10')
store("rule-violation-after-last-turn-end", "A well-formed event with the right seq that breaks a "
      "rule (I6) after the last turn/end, with no turn/end after it, is treated like any other "
      "damaged line: a torn tail (the checker still reports I6).",
      TURN1 + OPEN2 + [dumps({"seq": 10, "time": 1100, "type": "turn/end",
                              "data": {"turn": 2, "reason": {"kind": "completed"}}}),
                       dumps({"seq": 11, "time": 1110, "type": "step/start", "data": {"turn": 3, "step": 1}})],
      {"valid": False, "rule": "I6", "seq": 11, "line": 13},
      {"damage": "torn-tail", "line": 13, "kept_events": 11, "closers": []})
store("malformed-turn-end-still-commits", "A later line that is a JSON object of type turn/end "
      "commits even if it is not a valid event (here it has no reason): corruption.",
      TURN1 + OPEN2 + ["\u0000", dumps({"seq": 10, "time": 1100, "type": "turn/end", "data": {"turn": 2}})],
      {"unreadable": True, "line": 12},
      {"damage": "corruption", "line": 12})
store("turn-end-text-is-not-a-commit", "A later line that is not JSON does not commit anything, "
      "even if it contains the text turn/end: torn tail.",
      TURN1 + OPEN2 + ["\u0000", 'turn/end {"type":"turn/end"'],
      {"unreadable": True, "line": 12},
      {"damage": "torn-tail", "line": 12, "kept_events": 10, "closers": CLOSE2})
store("no-damage", "A clean balanced file: nothing to cut, nothing to close.",
      TURN1, {"valid": True, "balanced": True},
      {"damage": "none", "kept_events": 9, "closers": []})


# ===========================================================================================
# Edge cases a port decides differently unless told: numbers, identities, kinds, notes.
# ===========================================================================================


def numbers_turn(block_args: str, call_args: str) -> list[Any]:
    """opening() (seq 0-4), then the message and its tool/call as raw lines (seq 5-6) whose
    arguments are written exactly as given, then the result and the ends (seq 7-9)."""
    message = ('{"seq":5,"time":1050,"type":"assistant/message","data":{"turn":1,"step":1,'
               '"message":{"id":"a1.1","content":[{"type":"tool-call","id":"c1","name":"query",'
               '"arguments":' + block_args + '}]}}}')
    dispatch = ('{"seq":6,"time":1060,"type":"tool/call","data":{"turn":1,"step":1,"callId":"c1",'
                '"name":"query","arguments":' + call_args + '}}')
    tail = [dict(ev, seq=7 + i, time=1070 + 10 * i) for i, ev in enumerate([res(1, 1, "c1", "[]"), se(1, 1), te(1)])]
    return [*opening(), message, dispatch, *tail]


valid(
    "arguments-numbers-as-binary64",
    "Numbers in arguments compare as the IEEE 754 binary64 values a JSON reader gives them "
    "(log.md §Values): 100 and 1e2, 0 and -0.0, 0.1 and 0.10, and 9007199254740993 and "
    "9007199254740992 (both read as 2^53) are the same value. A reader that compares the digits, "
    "or big integers exactly, refuses this log wrongly.",
    numbers_turn('{"a":100,"b":0,"c":0.1,"d":9007199254740993}',
                 '{"a":1e2,"b":-0.0,"c":0.10,"d":9007199254740992}'),
    True,
)
def nested(levels: int) -> str:
    """An arguments object whose one value is ``levels`` arrays nested in each other."""
    return '{"x":' + "[" * levels + "]" * levels + "}"


valid(
    "arguments-nested-at-the-limit",
    "A line may nest 100 levels of arrays and objects, its own object being level 1 "
    "(log.md §Values): the assistant message's line here is exactly 100 deep (its arguments "
    "object is level 6, then 94 arrays), its tool/call's 97. A reader with a lower limit, or "
    "one whose comparison of the two arguments runs out of stack, refuses it wrongly.",
    numbers_turn(nested(94), nested(94)),
    True,
)
unreadable("nested-beyond-the-limit", "A line nested 101 levels deep is not JSON this format "
           "reads (log.md §Values), whatever the parser at hand allows (orjson reads 1024 levels, "
           "Go's encoding/json 10000): the assistant message's line here is one level deeper than "
           "valid/arguments-nested-at-the-limit's.",
           render(numbers_turn(nested(95), nested(95))), 7)
case(
    "invalid/I11-numbers-differ-as-binary64",
    "0.30000000000000004 and 0.3 are different binary64 values: not the same arguments.",
    numbers_turn('{"x":0.30000000000000004}', '{"x":0.3}')[:7],
    {"valid": False, "rule": "I11", "seq": 6, "line": 8},
)
valid(
    "seq-written-minus-zero",
    "A seq written -0 is the integer 0 (a JSON number without fraction or exponent): valid.",
    ['{"seq":-0,"time":1000,"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,'
     '"inserted":[{"id":"m1","text":"hi","source":"user"}]}}'],
    True,
)
case(
    "invalid/I0-seq-beyond-safe-integer",
    "An integer field is at most 2^53 - 1 (log.md §Values). seq 9007199254740992 breaks I0, "
    "not I1, and it is shown as ? (it is not an integer this format reads).",
    [ins("next-turn", m("m1")),
     '{"seq":9007199254740992,"time":1010,"type":"turn/start","data":{"turn":1}}'],
    {"valid": False, "rule": "I0", "seq": None, "line": 3},
)
case(
    "invalid/I0-seq-beyond-64-bits",
    "seq 18446744073709551617 (beyond 64 bits) breaks I0 like any seq above 2^53 - 1, shown as ?.",
    [ins("next-turn", m("m1")),
     '{"seq":18446744073709551617,"time":1010,"type":"turn/start","data":{"turn":1}}'],
    {"valid": False, "rule": "I0", "seq": None, "line": 3},
)
case(
    "invalid/I0-turn-beyond-safe-integer",
    "A data field's integer is bounded too: turn 9007199254740992 breaks I0, not I3.",
    [ins("next-turn", m("m1")),
     '{"seq":1,"time":1010,"type":"turn/start","data":{"turn":9007199254740992}}'],
    {"valid": False, "rule": "I0", "seq": 1, "line": 3},
)

repair(
    "identity-forms-other-host",
    "Recovery with boot id B; every group ran under A. Only an identity of exactly two or three "
    "':'-separated non-empty parts whose second is ASCII decimal digits gets R5's other-host "
    "sentence: c1 (A:81234) does; c2 (four parts), c3 (an empty part), c4 (8123x) and c5 "
    "(Arabic-Indic digits, which some languages' isdigit accepts) do not.",
    [*opening(),
     amsg(1, 1, *[tc(c, "bash", {"command": "true"}) for c in ("c1", "c2", "c3", "c4", "c5")]),  # seq 5
     call(1, 1, "c1", "bash", {"command": "true"}), spawned(1, 1, "c1", 101, f"{BOOT_A}:81234"),  # 6-7
     call(1, 1, "c2", "bash", {"command": "true"}), spawned(1, 1, "c2", 102, f"{BOOT_A}:81234:00aa:x"),  # 8-9
     call(1, 1, "c3", "bash", {"command": "true"}), spawned(1, 1, "c3", 103, f"{BOOT_A}::00aa"),  # 10-11
     call(1, 1, "c4", "bash", {"command": "true"}), spawned(1, 1, "c4", 104, f"{BOOT_A}:8123x:00aa"),  # 12-13
     call(1, 1, "c5", "bash", {"command": "true"}), spawned(1, 1, "c5", 105, f"{BOOT_A}:\u0663\u0664:00aa")],  # 14-15
    [full(16, 1150, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + other_host(BOOT_A))),
     *[full(16 + i, 1150, placeholder(1, 1, c, "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", c)))
       for i, c in enumerate(("c2", "c3", "c4", "c5"), start=1)],
     full(21, 1150, se(1, 1)), full(22, 1150, te(1, "interrupted"))],
    False,
    bootId=BOOT_B,
)

repair(
    "kind-for-call-without-spawned",
    "R5's kinds are an input to repair, not something it verifies: a kind that names a dispatched, "
    "unanswered call gets its sentence even if the call never logged tool/spawned (how recovery "
    "found it is the store's business).",
    [*opening(), amsg(1, 1, tc("c1", "bash", SLEEP)), call(1, 1, "c1", "bash", SLEEP)],  # seq 0-6
    [full(7, 1060, placeholder(1, 1, "c1", "TOOL_OUTCOME_UNKNOWN", unknown_text("bash", "c1") + STOPPED)),
     full(8, 1060, se(1, 1)), full(9, 1060, te(1, "interrupted"))],
    False,
    stopped=["c1"],
)

case(
    "torn/invalid-line-then-torn-tail",
    "check stops at the first problem, line 3 (I1), before the torn tail: it prints no torn-tail "
    "note, since it ignored nothing it read (cli.md §stderr: errors and notes).",
    [ins("next-turn", m("m1")), dict(ts(1), seq=2)],
    {"valid": False, "rule": "I1", "seq": 2, "line": 3},
    torn='{"seq":3,"ti',
)


# -- checkpoint/: cold-open checkpoints (spec/persistence.md §5.1) ----------------------------
# Not run by `trio-agent conform` (no CLI command reads a sidecar): a port that records
# checkpoints checks its own take/encode and verify against them. The state in each sidecar
# is written out by hand below; the digests are facts about the bytes, computed.

CP_FILE_ID = "2049:131077"  # the log's identity as the opener finds it ("<st_dev>:<st_ino>")


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sidecar(body: dict[str, Any]) -> str:
    """The sidecar line (without its newline) of a checkpoint body: its digest added."""
    return canonical({**body, "digest": sha(canonical(body))})


# Turn 1 asks for and runs c1 (approval p1), and a steer m2 arrives for the next turn before
# it ends; the checkpoint is taken at its turn/end (seq 0-14). Turn 2 claims m2 and is cut
# by a crash in the middle of its call c2 (seq 15-21).
CP_PREFIX = [
    *opening(1, "m1"),                                           # seq 0-4
    amsg(1, 1, tc("c1")), asked(1, 1, "p1", "c1"), decided(1, 1, "p1", "allowed"),
    call(1, 1, "c1"), res(1, 1, "c1"), se(1, 1),                 # seq 5-10
    ss(1, 2), amsg(1, 2, text("Done.")),                         # seq 11-12
    ins("next-turn", m("m2")), se(1, 2), te(1),                  # seq 13-15
]
CP_TAIL = [
    ts(2), claim(), ss(2, 1), user(2, 1, m("m2")),               # seq 16-19
    amsg(2, 1, tc("c2")), call(2, 1, "c2"),                      # seq 20-21
]
CP_LOG = render(CP_PREFIX + CP_TAIL)
CP_PREFIX_LOG = CP_LOG[: 1 + len(CP_PREFIX)]
CP_OFFSET = sum(len(line.encode("utf-8")) + 1 for line in CP_PREFIX_LOG)
CP_BODY = {
    "format": "trio-agent-checkpoint/1",
    "session": "vec",
    "offset": CP_OFFSET,
    "seq": 16,
    "headerLine": sha(CP_LOG[0] + "\n"),
    "lastLine": sha(CP_PREFIX_LOG[-1] + "\n"),
    "fileId": CP_FILE_ID,
    "lastTurn": 1,
    "lastStep": 2,
    "lastTime": T0 + 10 * 15,
    "callIds": ["c1"],
    "approvalIds": ["p1"],
    "inbox": {"next-step": [], "next-turn": [m("m2")]},
}
CP_CLOSERS = [
    full(22, T0 + 10 * 21, placeholder(2, 1, "c2", "TOOL_OUTCOME_UNKNOWN", unknown_text("read_file", "c2"))),
    full(23, T0 + 10 * 21, se(2, 1)),
    full(24, T0 + 10 * 21, te(2, "interrupted")),
]


def checkpoint(cid: str, description: str, log: list[str], sidecar_line: str | None,
               expect: dict[str, Any], file_id: str = CP_FILE_ID) -> None:
    case(f"checkpoint/{cid}", description, [], expect, raw_log=log, sidecar=sidecar_line,
         fileId=file_id)


checkpoint(
    "take-after-a-turn",
    "The checkpoint a writer records at turn 1's turn/end: the state that outlives a turn (next "
    "seq 16, last turn 1 and its last step 2, the last time, the call and approval ids, the steer "
    "m2 waiting in next-turn), the prefix's length and the digests of its first and last lines. "
    "A port's take+encode of this log, with this fileId, gives exactly `expect.sidecar`.",
    CP_PREFIX_LOG, None, {"sidecar": sidecar(CP_BODY)},
)
checkpoint(
    "resume-and-repair",
    "The log went on after the checkpoint and the process died inside turn 2. The checkpoint "
    "describes the log as found, so it is used: the checker restored from it, fed only the "
    "tail (seq 16-21), gives the closers a full scan gives.",
    CP_LOG, sidecar(CP_BODY), {"used": True, "closers": CP_CLOSERS},
)
checkpoint(
    "missing",
    "No sidecar: the whole log is read.",
    CP_LOG, None, {"refused": "missing", "closers": CP_CLOSERS},
)
checkpoint(
    "torn",
    "The sidecar was cut in the middle of its write (not one JSON object): refused, full scan.",
    CP_LOG, sidecar(CP_BODY)[:97], {"refused": "torn", "closers": CP_CLOSERS},
)
checkpoint(
    "digest-mismatch",
    "One value changed after the digest was computed (lastTurn 1 -> 2): torn, not trusted.",
    CP_LOG, sidecar(CP_BODY).replace('"lastTurn":1', '"lastTurn":2'),
    {"refused": "torn", "closers": CP_CLOSERS},
)
checkpoint(
    "unsupported-format",
    "An intact checkpoint of another format version: refused as unsupported.",
    CP_LOG, sidecar({**CP_BODY, "format": "trio-agent-checkpoint/2"}),
    {"refused": "unsupported", "closers": CP_CLOSERS},
)
checkpoint(
    "truncated",
    "The log was cut back below the checkpoint's offset (to the end of turn 1's first step): "
    "refused as truncated, full scan.",
    CP_LOG[: 1 + 11], sidecar(CP_BODY),
    {"refused": "truncated",
     "closers": [full(11, T0 + 10 * 10, te(1, "interrupted"))]},
)
checkpoint(
    "copied",
    "The session directory was copied with its sidecar: the log is another file now (another "
    "fileId), so the checkpoint may describe another history; refused as copied.",
    CP_LOG, sidecar(CP_BODY), {"refused": "copied", "closers": CP_CLOSERS},
    file_id="2049:999999",
)
CP_REWRITTEN = [*CP_LOG]
CP_REWRITTEN[len(CP_PREFIX)] = CP_REWRITTEN[len(CP_PREFIX)].replace('"time":1150', '"time":1151')
checkpoint(
    "mismatched-last-line",
    "The log was rewritten: the line ending at the checkpoint's offset is the same length but "
    "not the same bytes (its time differs by 1 ms). Refused as mismatched.",
    CP_REWRITTEN, sidecar(CP_BODY), {"refused": "mismatched", "closers": CP_CLOSERS},
)
checkpoint(
    "state-disagrees",
    "A whole sidecar (its digest matches) whose seq is one too low for the turn/end it ends at: "
    "used, it would take the tail's first event for a gap. Refused as mismatched.",
    CP_LOG, sidecar({**CP_BODY, "seq": 15}), {"refused": "mismatched", "closers": CP_CLOSERS},
)
checkpoint(
    "out-of-range",
    "A whole sidecar with a negative lastTime: no checker holds that state. Refused as "
    "unsupported before anything is compared.",
    CP_LOG, sidecar({**CP_BODY, "lastTime": -1}), {"refused": "unsupported", "closers": CP_CLOSERS},
)
checkpoint(
    "mismatched-header",
    "Another session's log of the same length in this one's place (its header names session "
    "vex): the header line's digest differs. Refused as mismatched.",
    [CP_LOG[0].replace('"vec"', '"vex"'), *CP_LOG[1:]], sidecar(CP_BODY),
    {"refused": "mismatched", "closers": CP_CLOSERS},
)


# A sidecar is read as a log line is (log.md §Torn tail, §Values): JSON a log line could not be
# is torn. Each of these is whole to a lenient reader (its digest is the one such a reader
# computes), and one that parses with Python's json either uses it or fails on it.


def with_odd_value(value: Any) -> dict[str, Any]:
    """CP_BODY with ``value`` under an extension key of the queued message m2."""
    return {**CP_BODY, "inbox": {"next-step": [], "next-turn": [{**m("m2"), "x": value}]}}


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def lone_surrogate_sidecar() -> str:
    """The sidecar with ``"\\ud800"`` as m2's extension value, its digest over the bytes as
    written (the escape, six characters): a lone surrogate has no UTF-8 form to hash."""
    def escaped(body: dict[str, Any]) -> str:
        return canonical(body).replace('"LONE"', '"\\ud800"')

    body = with_odd_value("LONE")
    return escaped({**body, "digest": sha(escaped(body))})


checkpoint(
    "torn-nan",
    "m2 carries NaN under an extension key; the digest is over the rest as Python's json "
    "writes it (NaN). NaN is not JSON (log.md §Torn tail): the sidecar is torn, full scan.",
    CP_LOG, sidecar(with_odd_value(float("nan"))), {"refused": "torn", "closers": CP_CLOSERS},
)
checkpoint(
    "torn-lone-surrogate",
    "m2 carries an escaped lone surrogate under an extension key, the digest over the bytes "
    "as written. It names no Unicode character, so it is not JSON (log.md §Torn tail): torn, "
    "full scan, never an error.",
    CP_LOG, lone_surrogate_sidecar(), {"refused": "torn", "closers": CP_CLOSERS},
)
checkpoint(
    "torn-nested-too-deep",
    "m2 carries 97 nested arrays under an extension key: the sidecar nests 101 levels, one more "
    "than a log line may (log.md §Values), where the splice that queued m2 would itself have "
    "been too deep. Torn, full scan.",
    CP_LOG, sidecar(with_odd_value(nested(97))), {"refused": "torn", "closers": CP_CLOSERS},
)

# ===========================================================================================


def main() -> None:
    for folder in FOLDERS:
        shutil.rmtree(HERE / folder, ignore_errors=True)
    for cid, body in sorted(CASES.items()):
        path = HERE / f"{cid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts = {f: sum(1 for c in CASES if c.startswith(f + "/")) for f in FOLDERS}
    print(f"{len(CASES)} vectors: " + ", ".join(f"{f} {n}" for f, n in counts.items()))


if __name__ == "__main__":
    main()
