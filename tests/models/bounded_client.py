"""The client side of the bounds tests, run as its own process so that its memory is its own:
``python bounded_client.py URL API [LIMITS_JSON]``. It loads everything, prints ``ready``,
waits for a line on stdin, runs one turn against URL (``openai`` or ``anthropic``), prints the
turn's end reason as JSON, and waits for another line before it exits, so the test can read
its ``/proc`` status while it is still there."""

from __future__ import annotations

import sys
from typing import Any

import orjson
import trio

from trio_agent.models import Limits, OpenAIChatModel
from trio_agent.runtime import open_agent
from trio_agent.store import Session
from trio_agent.tools.builtin import EchoTool


def make_model(url: str, api: str, limits: Limits) -> Any:
    if api == "anthropic":
        from trio_agent.models import AnthropicModel

        return AnthropicModel(url, "m", api_key="k", limits=limits)
    return OpenAIChatModel(url, "m", api_key="", limits=limits)


async def main(url: str, api: str, limits: Limits) -> None:
    session = Session.in_memory()
    model = make_model(url, api, limits)
    async with open_agent(session, model=model, tools=[EchoTool()]) as agent:
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        agent.followup("go")
        await agent.wait_idle()
    end = [e.data["reason"] for e in session.events if e.type == "turn/end"][-1]
    chunks = sum(1 for e in session.events if e.type == "assistant/chunk")
    print(orjson.dumps({"end": end, "chunks": chunks}).decode(), flush=True)
    await trio.to_thread.run_sync(sys.stdin.readline)


if __name__ == "__main__":
    given = orjson.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    trio.run(main, sys.argv[1], sys.argv[2], Limits(**given))
