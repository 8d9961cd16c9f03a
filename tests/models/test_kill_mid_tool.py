"""kill -9 of a real agent process while its model's bash call runs, then a reopen: the next
request the provider receives answers that call with the repair placeholder, and recovery
stopped the process group the dead agent left behind (spec/recovery.md R4, R5;
spec/tools.md §9; spec/models.md, the ``tool`` message)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import trio
from support.polling import until
from support.proc import in_group, tagged

from trio_agent.log import REAPED_TEXTS, check_events
from trio_agent.procs.census import MARKER_VAR, identity_marker
from trio_agent.procs.containment import POLICY_VAR
from trio_agent.store import JsonlStore
from trio_agent.testing.provider import Play, serve_provider, text_events, tool_call_events

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only: every wait below is for a condition that comes; this bounds a bug.
HANG_GUARD = 60
COMMAND = "echo started; exec sleep 600"


def durable_events(path: Path) -> list[dict[str, Any]]:
    """The complete event lines of the log on disk (a torn last line is not yet written)."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")[1:-1]  # the header, and whatever follows the last \n
    return [json.loads(line) for line in lines]


async def until_on_disk(path: Path, predicate: Any) -> list[dict[str, Any]]:
    """The durable events, once ``predicate`` holds of them."""

    def probe() -> tuple[list[dict[str, Any]]] | None:
        events = durable_events(path)
        return (events,) if predicate(events) else None  # a tuple: true even for no events

    found = await until(probe, guard=HANG_GUARD, period=0.01)
    assert found is not None
    return found[0]


def started_output(events: list[dict[str, Any]]) -> bool:
    return any(e["type"] == "tool/output" and "started" in e["data"]["text"] for e in events)


#: The agent runs its tools on the process-group fallback (spec/tools.md §10), where a tool
#: outlives a killed agent and the reopen must stop it; in a PID namespace it would die with
#: the agent (tests/tools/test_containment.py).
FALLBACK = {**os.environ, POLICY_VAR: "process-group"}


async def test_kill_9_mid_tool_then_reopen_sends_the_placeholder(tmp_path: Path) -> None:
    plays = [
        Play(events=(*tool_call_events("bash", json.dumps({"command": COMMAND}),
                                       call_id="call_k9"), "[DONE]")),
        Play(events=(*text_events("Understood."), "[DONE]")),
    ]  # fmt: skip
    root = tmp_path / "sessions"
    log = root / "s1" / "session.jsonl"
    read_end, write_end = os.pipe()
    marker: str | None = None
    try:
        async with serve_provider(plays) as provider:
            argv = [sys.executable, "-m", "trio_agent", "run", "--root", str(root),
                    "--session", "s1", "--model", provider.url, "--model-name", "m"]  # fmt: skip
            # The first agent: its stdin stays open, so it waits for more input until killed.
            async with trio.open_nursery() as nursery:
                agent = await nursery.start(
                    lambda task_status: trio.run_process(
                        argv, stdin=read_end, capture_stdout=True, capture_stderr=True,
                        check=False, cwd=ROOT, task_status=task_status, env=FALLBACK,
                    )
                )  # fmt: skip
                os.close(read_end)
                os.write(write_end, b"list the files\n")
                # The tool runs: its first output line reached the log on disk.
                events = await until_on_disk(log, started_output)
                spawned = next(e["data"] for e in events if e["type"] == "tool/spawned")
                assert spawned["callId"] == "call-1-1-1"  # ours; the provider's is call_k9
                pgid, marker = spawned["pgid"], identity_marker(spawned["identity"])
                assert marker is not None
                assert in_group(pgid)  # the sleep is running
                agent.send_signal(signal.SIGKILL)
                with trio.fail_after(HANG_GUARD):
                    await agent.wait()
            assert agent.returncode == -signal.SIGKILL
            # The dead agent's tool lives on: it has its own session and process group.
            assert in_group(pgid)
            assert not any(e["type"] == "tool/result" for e in durable_events(log))

            # Reopen in a new process: the cold open repairs the log, then the next turn runs.
            with trio.fail_after(HANG_GUARD):
                done = await trio.run_process(
                    argv, stdin=b"what happened?\n", capture_stdout=True, capture_stderr=True,
                    check=False, cwd=ROOT, env=FALLBACK,
                )  # fmt: skip
            requests = provider.requests
    finally:
        os.close(write_end)
        for pid in tagged(MARKER_VAR, marker) if marker is not None else []:
            os.kill(pid, signal.SIGKILL)  # only after a failure: the test's own sleep
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in done.stdout.decode() + err

    # Recovery stopped the orphan: nothing of its group, nothing carrying its marker, is left.
    assert in_group(pgid) == []
    assert tagged(MARKER_VAR, marker) == {}

    # The log: the placeholder answers call-1-1-1 (the provider's call_k9), then the
    # resumed turn completed.
    async with JsonlStore(root) as store:
        events_after = await store.load("s1")
    assert check_events(events_after).open_turn is None  # valid and balanced
    placeholder = next(e.data for e in events_after if e.type == "tool/result")
    assert placeholder["callId"] == "call-1-1-1"
    assert placeholder["isError"] is True
    assert placeholder["error"] == {"code": "TOOL_OUTCOME_UNKNOWN"}
    assert "outcome is unknown" in placeholder["content"]
    assert "Do not retry blindly." in placeholder["content"]
    assert placeholder["content"].endswith(REAPED_TEXTS["stopped"])

    # The next request carries that placeholder as the tool message for the call.
    assert len(requests) == 2
    messages = requests[1]["messages"]
    tools = [m for m in messages if m["role"] == "tool"]
    # After the reopen the provider is still shown its own id, read back from the log.
    assert len(tools) == 1 and tools[0]["tool_call_id"] == "call_k9"
    assert tools[0]["content"].endswith(placeholder["content"])  # what the call printed first
    assert "started" in tools[0]["content"]
    assistant = next(m for m in messages if m.get("tool_calls"))
    assert assistant["tool_calls"][0]["id"] == "call_k9"
    assert messages[-1] == {"role": "user", "content": "what happened?"}
