"""A turn from start to end: one message in, one answer out, every event in the log."""

import tempfile

import trio

from trio_agent import JsonlStore, ScriptedModel, open_agent

# What the model will say: one entry per model call (here one call, no tools).
SCRIPT = [{"text": "Hello! Nothing to run."}]


async def main() -> None:
    async with JsonlStore(tempfile.mkdtemp()) as store:
        session = await store.create("hello")
        async with open_agent(session, model=ScriptedModel(SCRIPT)) as agent:
            agent.followup("hi")  # queue a message; the idle agent starts a turn for it
            await agent.wait_idle()  # the turn ran, and its end is on disk
        for event in session.events:
            print(event.seq, event.type)


trio.run(main)
