"""Esc: cancel the running turn. The tool's processes stop, and the turn still ends."""

import tempfile

import trio

from trio_agent import (
    BashTool,
    CancelCause,
    JsonlStore,
    ScriptedModel,
    open_agent,
    render_timeline,
    scan_log,
)

SCRIPT = [
    {"text": "Running it.", "tool_calls": [
        {"name": "bash", "arguments": {"command": "echo started; sleep 600"}}]},
]  # fmt: skip


async def main() -> None:
    async with JsonlStore(tempfile.mkdtemp()) as store:
        session = await store.create("esc")
        printed = trio.Event()  # set when the tool has printed its first line
        session.subscribe(lambda e: printed.set() if e.type == "tool/output" else None)
        async with open_agent(session, model=ScriptedModel(SCRIPT), tools=[BashTool()]) as agent:
            agent.followup("run the long thing")
            agent.followup("and then this")  # queued behind the running turn
            await printed.wait()
            agent.cancel(CancelCause.user())  # what Esc does
            await agent.wait_idle()
    scan = scan_log(store.path_of("esc").read_bytes())  # the file on disk, read back
    for line in render_timeline(scan.header, scan.events):
        print(line)


trio.run(main)
