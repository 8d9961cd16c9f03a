"""Two ways to recover a crashed log: cut the open turn off, or complete it.

A log that a kill -9 leaves behind is a prefix of the log the run would have written (every
event is appended, never rewritten). So cut a finished log after its tool's output, and
compare what each strategy makes of that prefix.
"""

import tempfile
from typing import Any

import trio

from trio_agent import (
    BashTool,
    JsonlStore,
    ScriptedModel,
    open_agent,
    repair_closers,
    scan_log,
    truncate_open_turn,
)

SCRIPT: list[dict[str, Any]] = [
    {"text": "Listing.", "tool_calls": [
        {"name": "bash", "arguments": {"command": "echo one file"}}]},
    {"text": "There is one file."},
]  # fmt: skip


async def finished_log() -> bytes:
    async with JsonlStore(tempfile.mkdtemp()) as store:
        session = await store.create("s")
        async with open_agent(session, model=ScriptedModel(SCRIPT), tools=[BashTool()]) as agent:
            agent.followup("what is here?")
            await agent.wait_idle()
    return store.path_of("s").read_bytes()


def main() -> None:
    lines = trio.run(finished_log).splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"tool/output"' in line) + 1
    crashed = scan_log(b"".join(lines[:cut]))  # as if killed right after the output
    print(f"the crashed log: {len(crashed.events)} events, last {crashed.events[-1].type}")

    report = truncate_open_turn(crashed.events)
    print(f"truncate keeps {len(report.kept)} of them and throws away {len(report.dropped)}:")
    print(f"  {report.dropped_by_type}")

    closers = repair_closers(crashed.events)
    print(f"complete keeps all {len(crashed.events)} and appends {len(closers)}:")
    for event in closers:
        print(f"  [{event.seq}] {event.type}")


if __name__ == "__main__":
    main()
