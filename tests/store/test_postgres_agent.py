"""An agent whose session is taken over by another owner while it runs a turn (real server).

The old writer's store keeps running the agent; a second store (playing another process on
another machine) takes the lease over and repairs the session. The agent must stop its run with
one ``AgentError`` naming the new owner, stop the turn's tool (no zombie work), start nothing
more, and none of what it appended after the takeover may reach the table. The fencing is
found either by a renewal (the old lease is short, so renewals come often) or by a batch (the
old lease is long; the zombie's next append is what meets the new token).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from support.store.pg import force_expiry, rows

from trio_agent.log import check_events, encode_event
from trio_agent.models.scripted import ScriptedModel
from trio_agent.runtime import AgentError, TurnEnded, open_agent
from trio_agent.store import PostgresStore, SessionFenced, postgres
from trio_agent.tools.base import ToolCall, ToolContext, ToolOutcome


class BlockingTool:
    """A parallel tool whose body says it started and then waits until it is cancelled."""

    name = "work"
    parallel = True

    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = False

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        self.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled = True
            raise


@pytest.mark.parametrize("found_by", ["renewal", "batch"])
async def test_agent_stops_its_run_when_fenced(pg_dsn: str, found_by: str) -> None:
    old_lease = 0.6 if found_by == "renewal" else 3600.0
    tool = BlockingTool()
    model = ScriptedModel([{"text": "working", "tool_calls": [{"id": "c1", "name": "work"}]}])
    seen: list[Any] = []
    async with (
        PostgresStore(pg_dsn, lease=old_lease, owner="old-host", reap_orphans=None) as old_store,
        PostgresStore(pg_dsn, lease=3600.0, owner="new-host", reap_orphans=None) as new_store,
    ):
        session = await old_store.create("s1")
        with pytest.raises(SessionFenced) as at_exit:  # the final flush of leaving the block
            async with open_agent(session, model=model, tools=[tool]) as agent:
                agent.subscribe(seen.append)
                agent.followup("go")
                await tool.started.wait()  # its tool/call is durable (flushed before the body)
                durable_before = len(rows(pg_dsn, "s1"))
                assert durable_before == len(session.events)

                # Another process takes the session over: lease lapsed, opened, repaired.
                force_expiry(pg_dsn, "s1")
                postgres._LIVE.clear()  # the second store plays another process
                new = await new_store.open("s1")
                assert new.events[-1].type == "turn/end"  # turn 1 closed by the repair
                new.append("turn/start", {"turn": 2})
                new.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
                await new.flush()

                if found_by == "batch":
                    agent.inject("a zombie's append")  # its batch meets the new token
                await agent.wait_idle()  # the run stopped: the tool was cancelled, turn ended

                errors = [e for e in seen if isinstance(e, AgentError)]
                assert len(errors) == 1, errors
                assert "new-host" in errors[0].message
                assert isinstance(errors[0].exception, SessionFenced)
                assert errors[0].exception.owner == "new-host"
                assert agent.lost is errors[0].exception
                assert tool.cancelled
                ended = [e.outcome for e in seen if isinstance(e, TurnEnded)]
                assert [o.turn for o in ended] == [1]
                assert session.lost is not None and session.lost.owner == "new-host"

                # Nothing more runs: an inbox call is refused with the fencing error.
                with pytest.raises(SessionFenced):
                    agent.followup("more work")
                assert agent.status == "idle"
        assert at_exit.value.owner == "new-host"
        with pytest.raises(SessionFenced):
            await session.aclose()

        # The table holds exactly the new owner's log: the zombie's appends after the
        # takeover (the cancelled tool's result, its turn/end, the inject) never landed.
        written = rows(pg_dsn, "s1")
        assert written == [encode_event(e)[:-1] for e in new.events]
        check_events(new.events)
        zombie_only = session.events[durable_before:]
        assert zombie_only and all(encode_event(e)[:-1] not in written for e in zombie_only)
        assert b"a zombie's append" not in b"".join(written)
        assert await new_store.lease_of("s1") == ("new-host", 2, True)
