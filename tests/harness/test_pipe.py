"""The same machine, driving our runtime in a subprocess over the JSON-lines protocol.

A crash there is a real SIGKILL of the server process (sent by the driver between requests,
or by the server itself when an armed crash point is reached), and the next incarnation is a
new process that cold-opens a copy of the bytes the dead one left.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from support.harness_settings import PIPE_EXAMPLES, run_machine
from support.polling import HANG_GUARD
from support.proc import in_group

from trio_agent.testing.inprocess import InProcessAdapter
from trio_agent.testing.machine import machine_for
from trio_agent.testing.pipe import PipeAdapter
from trio_agent.testing.protocol import POINTS, PROTOCOL, Adapter


@pytest.mark.slow  # long: make test-fast leaves it out
def test_the_machine_drives_the_runtime_through_the_subprocess_adapter() -> None:
    machine = machine_for(PipeAdapter, profile="subprocess")
    run_machine(machine, examples=PIPE_EXAMPLES, steps=25)


def test_hello_names_the_protocol() -> None:
    adapter = PipeAdapter()
    try:
        reply = adapter.request({"op": "hello"})
    finally:
        adapter.close()
    assert reply["ok"] is True
    assert reply["result"]["protocol"] == PROTOCOL
    assert tuple(reply["result"]["points"]) == POINTS


def test_bad_requests_get_an_error_reply_not_a_dead_server(tmp_path: Path) -> None:
    adapter = PipeAdapter()
    try:
        assert adapter.request({"op": "hello"})["ok"] is True
        assert adapter.request({"op": "followup", "text": "x"})["ok"] is False  # no world
        log = tmp_path / "s" / "session.jsonl"
        assert (
            adapter.request({"op": "start", "log": str(log), "create": True, "plan": []})["ok"]
            is True
        )
        assert adapter.request({"op": "nope"})["ok"] is False
        assert adapter.request({"op": "tool", "decision": "finish"})["ok"] is False  # no job
        assert adapter.request({"op": "arm", "point": "nowhere", "action": {}})["ok"] is False
        # A malformed request is refused with the field and why, and the world stays as it was.
        refused = adapter.request({"op": "advance", "ticks": 1})
        assert refused["ok"] is False and "is missing @ $.seconds" in refused["error"], refused
        refused = adapter.request({"op": "cancel", "cause": "esc", "keep_inbox": False})
        assert refused["ok"] is False and "$.cause" in refused["error"], refused
        assert adapter.request({"op": "followup", "text": "still alive"})["ok"] is True
    finally:
        adapter.close()


SCRIPT: list[dict[str, Any]] = [
    {"op": "followup", "text": "one"},
    {"op": "advance", "ticks": 8, "seconds": 1},
    {"op": "tool", "decision": "finish"},
    {"op": "steer", "text": "two"},
    {
        "op": "arm",
        "point": "tool/call:after",
        "action": {"kind": "cancel", "cause": "user", "keep_inbox": True},
    },
    {"op": "advance", "ticks": 6, "seconds": 1},
    {"op": "inject", "text": "three"},
    {"op": "followup", "text": "four"},
    {"op": "advance", "ticks": 12, "seconds": 1},
    {"op": "flush"},
    {"op": "arm", "point": "step/end:after", "action": {"kind": "crash", "after_write": False}},
    {"op": "tool", "decision": "fail"},
]


#: Replies before the cancelled run unwinds (``settle: false``): a steer after the abort, a
#: second cancel of the cancelled controller, a latched followup and its replayed run.
HELD_SCRIPT: list[dict[str, Any]] = [
    {"op": "followup", "text": "one"},
    {"op": "advance", "ticks": 2, "seconds": 1},
    {"op": "cancel", "cause": "user", "keep_inbox": True, "settle": False},
    {"op": "cancel", "cause": "parent", "keep_inbox": True, "settle": False},
    {"op": "steer", "text": "two"},
    {"op": "followup", "text": "three"},
    {"op": "advance", "ticks": 30, "seconds": 1},
    {"op": "tool", "decision": "finish"},
    {"op": "advance", "ticks": 30, "seconds": 1},
]


def _cancel_at(point: str, *, keep_inbox: bool = True) -> dict[str, Any]:
    action = {"kind": "cancel", "cause": "user", "keep_inbox": keep_inbox}
    return {"op": "arm", "point": point, "action": action}


#: A cancel at each point between seams (spec/harness.md §Named points and traps): in the
#: dispatch flush of turn 1's sleep, after turn 2's finish chunk, from turn 3's turn/end
#: observer (the next turn is prevented, "four" parks), after turn 4's assistant message.
BETWEEN_SCRIPT: list[dict[str, Any]] = [
    _cancel_at("tool/call:flushed", keep_inbox=False),
    {"op": "followup", "text": "one"},
    {"op": "advance", "ticks": 8, "seconds": 1},
    _cancel_at("finish:observer"),
    {"op": "followup", "text": "two"},
    {"op": "advance", "ticks": 8, "seconds": 1},
    _cancel_at("turn/end:observer", keep_inbox=False),  # "four" queued: the clear is refused
    {"op": "followup", "text": "three"},
    {"op": "followup", "text": "four"},
    {"op": "advance", "ticks": 8, "seconds": 1},
    _cancel_at("assistant/message:observer"),
    {"op": "followup", "text": "five"},
    {"op": "advance", "ticks": 12, "seconds": 1},
]


def _normalized(adapter: Adapter, log: Path, script: list[dict[str, Any]] = SCRIPT) -> list[Any]:
    """Run ``script``; return every journal entry with message ids made positional."""
    ids: dict[str, str] = {}

    def norm(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return [norm(v) for v in value]
        if isinstance(value, str) and value.startswith("m-"):
            return ids.setdefault(value, f"m{len(ids)}")
        return value

    out: list[Any] = []
    start = {"op": "start", "log": str(log), "create": True, "plan": ["pair", "job", "talk"]}
    try:
        for message in [start, *script]:
            reply = adapter.request(message)
            assert reply["ok"] is True, reply
            out.append([message["op"], norm(reply["journal"]), reply["crashed"]])
            if reply["crashed"]:
                break
    finally:
        adapter.close()
    return out


def test_in_process_and_subprocess_adapters_report_the_same_journal(tmp_path: Path) -> None:
    a = _normalized(InProcessAdapter(), tmp_path / "a" / "s" / "session.jsonl")
    b = _normalized(PipeAdapter(), tmp_path / "b" / "s" / "session.jsonl")
    assert a[-1][2] is True  # the script ends in a crash
    assert a == b


def test_both_adapters_land_a_cancel_between_seams_alike(tmp_path: Path) -> None:
    a = _normalized(InProcessAdapter(), tmp_path / "a" / "s" / "session.jsonl", BETWEEN_SCRIPT)
    b = _normalized(PipeAdapter(), tmp_path / "b" / "s" / "session.jsonl", BETWEEN_SCRIPT)
    fired = [e["point"] for step in a for e in step[1] if e["k"] == "fire"]
    assert fired == [
        "tool/call:flushed",
        "finish:observer",
        "turn/end:observer",
        "assistant/message:observer",
    ]
    # K5: the turn/end observer's cancel had "four" to clear; the clear is refused there, the
    # cancel still hits (the next controller) and the error is journaled.
    ends = [e for step in a for e in step[1] if e.get("op") == "cancel" and e["phase"] == "end"]
    refused = [e for e in ends if "error" in e]
    assert len(refused) == 1, ends
    assert refused[0]["hit"] is True and refused[0]["error"].startswith("ReentrantAppend: ")
    assert a == b


#: K24: the running agent is left for a new one on the same session (its turn aborted, the
#: queue parked), then the idle one, right after an inject (its final flush writes it).
NEW_AGENT_SCRIPT: list[dict[str, Any]] = [
    {"op": "followup", "text": "one"},
    {"op": "followup", "text": "two"},
    {"op": "advance", "ticks": 2, "seconds": 1},
    {"op": "new_agent"},
    {"op": "inject", "text": "three"},
    {"op": "new_agent"},
    {"op": "followup", "text": "four"},
    {"op": "advance", "ticks": 12, "seconds": 1},
]


def test_both_adapters_replace_an_agent_alike(tmp_path: Path) -> None:
    a = _normalized(InProcessAdapter(), tmp_path / "a" / "s" / "session.jsonl", NEW_AGENT_SCRIPT)
    b = _normalized(PipeAdapter(), tmp_path / "b" / "s" / "session.jsonl", NEW_AGENT_SCRIPT)
    assert a == b
    idle_swap = [e["k"] if e["k"] != "act" else e["phase"] for e in a[6][1]]
    assert idle_swap == ["begin", "write", "end"]  # the final flush wrote the inject's splice
    begin = a[6][1][0]
    assert begin["second"] == "RuntimeError: session 's' already has an agent"


def test_both_adapters_hold_a_reply_that_did_not_settle(tmp_path: Path) -> None:
    a = _normalized(InProcessAdapter(), tmp_path / "a" / "s" / "session.jsonl", HELD_SCRIPT)
    b = _normalized(PipeAdapter(), tmp_path / "b" / "s" / "session.jsonl", HELD_SCRIPT)
    assert a == b
    held = a[3][1]  # the first cancel with settle: false: nothing after its end entry
    assert held[-1] == {"k": "act", "op": "cancel", "phase": "end", "hit": True, "turn": 1}
    again = a[4][1]  # the second cancel of the cancelled controller reaches nothing (K3)
    assert again[-1] == {"k": "act", "op": "cancel", "phase": "end", "hit": False, "turn": 1}
    inserted = next(e["event"]["data"] for e in a[5][1] if e["k"] == "event")
    assert inserted["target"] == "next-turn"  # a steer after an abort (K8)
    turns = [e["turn"] for step in a for e in step[1] if e.get("type") == "turn-started"]
    assert turns == [1, 2, 3]  # the latched wake replayed: "two", then "three"


def test_a_crash_after_a_write_that_the_disk_refuses_still_dies(tmp_path: Path) -> None:
    """``crash(after_write)`` at ``flush`` when an injected disk failure is due: the parked
    batch writes nothing, so the server must die at once instead of waiting for a write that
    never comes (it used to sleep forever). Both adapters agree on the durable bytes."""
    durable = []
    for adapter in (InProcessAdapter(), PipeAdapter(timeout=120)):  # the timeout: a hang guard
        log = tmp_path / type(adapter).__name__ / "s" / "session.jsonl"
        log.parent.mkdir(parents=True)
        try:
            assert adapter.request({"op": "start", "log": str(log), "create": True, "plan": []})[
                "ok"
            ]
            assert adapter.request({"op": "disk", "fail": 1})["ok"]
            crash = {"kind": "crash", "after_write": True}
            assert adapter.request({"op": "arm", "point": "flush", "action": crash})["ok"]
            reply = adapter.request({"op": "followup", "text": "hi"})
            if not reply["crashed"]:
                reply = adapter.request({"op": "flush"})
            assert reply["crashed"], reply
            durable.append(adapter.durable_bytes(str(log)))
        finally:
            adapter.close()
    assert durable[0] == durable[1]
    assert durable[0].count(b"\n") == 1  # the header only: the refused batch wrote nothing


def test_a_crash_does_not_wait_on_a_pipe_held_outside_the_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Something outside the runtime's process group (here: this test) holds the runtime's
    stdout open. The crash returns once the group is dead, and the driver's reader ends
    without an error when the last holder lets go, closing its stream itself. (It used to
    wait for an end-of-file that could not come, and its reader could find its stream closed
    under it: an exception in the thread, and a crash that never returned.)"""
    failed: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failed.append(args.exc_value))
    readers = {t for t in threading.enumerate() if t.name == "harness-pipe"}
    adapter = PipeAdapter(timeout=HANG_GUARD)  # the timeout: a hang guard
    try:
        assert adapter.request({"op": "hello"})["ok"]
        proc = adapter._proc
        assert proc is not None and proc.stdout is not None
        pipe = os.readlink(f"/proc/self/fd/{proc.stdout.fileno()}")
        (reader,) = {t for t in threading.enumerate() if t.name == "harness-pipe"} - readers
        holder = os.open(f"/proc/{proc.pid}/fd/1", os.O_WRONLY)  # the pipe's write end
        try:
            adapter.crash()
            assert in_group(proc.pid) == []
            assert reader.is_alive()  # the pipe is still open: no end-of-file yet
        finally:
            os.close(holder)
    finally:
        adapter.close()
    reader.join()  # the end-of-file comes now: the last writer is gone
    assert failed == []
    assert pipe not in _open_files()


def _open_files() -> list[str]:
    """What this process's descriptors name, as /proc says (``pipe:[N]`` for a pipe)."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # closed meanwhile (the listing's own)
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
    return names
