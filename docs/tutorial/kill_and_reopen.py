"""kill -9 in the middle of a tool call, then open the session again.

The worker (this file, run with ``worker DIR``) starts a turn whose tool prints a line and
then sleeps; the parent waits for that line, kills the worker with SIGKILL, and opens the
session: crash recovery completes the turn instead of cutting it off.
"""

import os
import signal
import subprocess
import sys
import tempfile

import trio

from trio_agent import BashTool, JsonlStore, ScriptedModel, open_agent, render_timeline, scan_log

SCRIPT = [
    {"text": "Running it.", "tool_calls": [
        {"name": "bash", "arguments": {"command": "echo started; sleep 600"}}]},
]  # fmt: skip


async def worker(root: str) -> None:
    async with JsonlStore(root) as store:
        session = await store.create("crash")
        printed = trio.Event()  # set when the tool has printed its first line
        session.subscribe(lambda e: printed.set() if e.type == "tool/output" else None)
        async with open_agent(session, model=ScriptedModel(SCRIPT), tools=[BashTool()]) as agent:
            agent.followup("run the long thing")
            await printed.wait()
            await session.flush()  # that line is on disk now: a kill cannot take it back
            print("ready", flush=True)
            await trio.sleep_forever()  # until the kill


async def reopen(root: str) -> None:
    async with JsonlStore(root) as store:
        session = await store.open("crash")  # the cold open repairs, durably
        await session.aclose()
    scan = scan_log(store.path_of("crash").read_bytes())
    for line in render_timeline(scan.header, scan.events[10:], count=len(scan.events), full=True):
        print(line)


def main() -> None:
    root = tempfile.mkdtemp()
    child = subprocess.Popen([sys.executable, __file__, "worker", root], stdout=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.readline() == b"ready\n"
    os.kill(child.pid, signal.SIGKILL)  # no finally runs, no turn/end is written
    child.wait()
    print(f"worker killed by signal {-child.returncode}")
    trio.run(reopen, root)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        trio.run(worker, sys.argv[2])
    else:
        main()
