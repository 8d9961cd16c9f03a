"""Cancel with a real HTTP model: ``cancel()`` (what Esc does) -> the server sees the socket
closed, for both adapters.

The loopback test provider (``trio_agent.testing.provider``) streams forever: one text delta
every millisecond (``then="drip"``; Anthropic's ``content_block_delta`` events for
``AnthropicModel``). Each round starts a turn on ``OpenAIChatModel`` or ``AnthropicModel``, waits
until three deltas were appended, lets the stream run for a moment, then calls
``agent.cancel(user)``. Two intervals are measured from that call, with
``time.perf_counter``: until the provider's connection handler saw the connection end (it
reads end-of-file, ``Connection.closed_at``), and until ``turn/end`` was appended. Server and
agent run in one process, one trio loop, so the server's stamp waits for its task to be
scheduled: the interval is "the client closed the socket and the server noticed".

Side by side, in the same run: the scripted model's streaming cancel latency (cancel ->
``turn/end``, as bench_runtime measures it), over the same number of rounds.

Size: ``TRIO_AGENT_BENCH_HTTP_CANCELS`` (default 300 rounds per model).
"""

from __future__ import annotations

import os
import statistics
import time

import trio
import trio.testing

from bench.bench_runtime import latency, ms, pct
from trio_agent.log.events import Event
from trio_agent.models import AnthropicModel, OpenAIChatModel
from trio_agent.runtime import CancelCause, open_agent
from trio_agent.store import Session
from trio_agent.testing.provider import Play, anthropic_events, serve_provider

ROUNDS = int(os.environ.get("TRIO_AGENT_BENCH_HTTP_CANCELS", "300"))
DRIP = Play(
    events=({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]},),
    then="drip",
    every=0.001,
    drip_text="y",
)
ANTHROPIC_DRIP = Play(
    named=True,
    events=anthropic_events("x", pieces=1)[:4],  # message_start, ping, block start, "x"
    then="drip",
    every=0.001,
    drip_text="y",
)


class Probe:
    """Session observer: ``ready`` after three streamed deltas; stamps ``turn/end``."""

    def __init__(self) -> None:
        self.reset()
        self.end_time = 0.0

    def reset(self) -> None:
        self.ready = trio.Event()
        self.ended = trio.Event()
        self.chunks = 0

    def __call__(self, event: Event) -> None:
        if event.type == "turn/end":
            self.end_time = time.perf_counter()
            self.ended.set()
        elif event.type == "assistant/chunk":
            self.chunks += 1
            if self.chunks == 3:
                self.ready.set()


async def http_latency(n: int, api: str = "openai") -> tuple[list[float], list[float]]:
    """``(cancel -> socket closed at the server, cancel -> turn/end)`` samples."""
    closed: list[float] = []
    ended: list[float] = []
    session = Session.in_memory()
    probe = Probe()
    session.subscribe(probe)
    drip = ANTHROPIC_DRIP if api == "anthropic" else DRIP
    async with serve_provider(default=drip) as provider:
        model: OpenAIChatModel | AnthropicModel = (
            AnthropicModel(provider.url, "bench", api_key="k-bench")
            if api == "anthropic"
            else OpenAIChatModel(provider.url, "bench", api_key="k-bench")
        )
        async with open_agent(session, model=model) as agent:
            for i in range(n):
                probe.reset()
                agent.followup("work")
                await probe.ready.wait()
                conn = provider.connections[i]
                await trio.sleep(0.001)  # mid-stream for a moment, as a person presses Esc
                await trio.testing.wait_all_tasks_blocked()
                assert not conn.closed.is_set()
                start = time.perf_counter()
                agent.cancel(CancelCause.user())
                await conn.closed.wait()
                await probe.ended.wait()
                assert conn.closed_at is not None
                closed.append(conn.closed_at - start)
                ended.append(probe.end_time - start)
                await agent.wait_idle()
    return closed, ended


def line(label: str, samples: list[float]) -> str:
    return (
        f"  {label:<40}  p50 {ms(pct(samples, 50))}  p99 {ms(pct(samples, 99))}  "
        f"max {ms(max(samples))}  mean {ms(statistics.fmean(samples))}"
    )


def main() -> None:
    print(f"cancel with an HTTP model, {ROUNDS} rounds per model (provider drips 1 delta/ms)")
    closed, ended = trio.run(http_latency, ROUNDS, "openai")
    a_closed, a_ended = trio.run(http_latency, ROUNDS, "anthropic")
    scripted, _cpu = trio.run(latency, "stream", ROUNDS)
    print(line("openai: cancel() -> server saw close", closed))
    print(line("openai: cancel() -> turn/end appended", ended))
    print(line("anthropic: cancel() -> server saw close", a_closed))
    print(line("anthropic: cancel() -> turn/end appended", a_ended))
    print(line("scripted: cancel() -> turn/end appended", scripted))
    print(
        f"  p50 ratio openai close / scripted turn/end: {pct(closed, 50) / pct(scripted, 50):.1f}x"
    )
    print(f"  p50 ratio anthropic close / openai close: {pct(a_closed, 50) / pct(closed, 50):.2f}x")


if __name__ == "__main__":
    main()
