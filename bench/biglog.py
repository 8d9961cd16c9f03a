"""A generator for the long-session log shape the file-command benchmark measures.

Each turn is one step: a queued message, ``turn/start``, its claim, ``step/start``, the
``user/message``, ``CHUNKS`` text chunks, an ``assistant/message`` with a 500-character text
and one ``bash`` call, the ``tool/call`` dispatch marker, ``OUTPUTS`` output lines, the
``tool/result``, ``step/end``, ``turn/end``: 50 events. The last turn has no ``turn/end``
(it is open), so ``repair`` has a closer to print. 32,000 turns make about 286 MB and
1,599,999 events. The file is written to a path the caller picks (a temporary directory) at
bench time; it is never committed.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, BinaryIO, Final

import orjson

CHUNKS: Final = 20
OUTPUTS: Final = 20
BIG_TURNS: Final = 32_000
_TIME0: Final = 1_700_000_000_000


def _words(rng: random.Random, size: int) -> str:
    vocab = ("make", "test", "the", "build", "passes", "error", "file", "line", "ok", "léger")
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(vocab)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)[:size]


def write_log(out: BinaryIO, turns: int, seed: int = 2026) -> tuple[int, int]:
    """Write a log of ``turns`` turns (the last one left open) to ``out``.

    Returns ``(bytes, events)`` written after the header.
    """
    rng = random.Random(seed)
    # A few texts reused round-robin: generation stays fast and the parser still sees
    # realistic, varied strings.
    chunk_texts = [_words(rng, 41) for _ in range(64)]
    output_texts = [_words(rng, 36) + "\n" for _ in range(64)]
    answer_texts = [_words(rng, 500) for _ in range(16)]
    header = {"type": "session", "version": 1, "id": "bench", "createdAt": _TIME0}
    out.write(orjson.dumps(header) + b"\n")
    seq = 0
    time = _TIME0
    size = 0
    buf: list[bytes] = []

    def emit(type_: str, data: dict[str, Any]) -> None:
        nonlocal seq, time
        time += 7
        buf.append(orjson.dumps({"seq": seq, "time": time, "type": type_, "data": data}) + b"\n")
        seq += 1

    for turn in range(1, turns + 1):
        msg = {"id": f"m{turn}", "text": f"run the tests, round {turn}", "source": "user"}
        emit("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]})
        emit("turn/start", {"turn": turn})
        claim = {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}
        emit("agent/inbox/spliced", claim)
        ts = {"turn": turn, "step": 1}
        emit("step/start", ts)
        emit("user/message", {**ts, "message": msg})
        for i in range(CHUNKS):
            chunk = {"type": "text-delta", "text": chunk_texts[(turn + i) % 64]}
            emit("assistant/chunk", {**ts, "chunk": chunk})
        cid = f"call-{turn}"
        arguments = {"command": f"make test -j2 TURN={turn}"}
        content = [
            {"type": "text", "text": answer_texts[turn % 16]},
            {"type": "tool-call", "id": cid, "name": "bash", "arguments": arguments},
        ]
        emit("assistant/message", {**ts, "message": {"id": f"a{turn}", "content": content}})
        emit("tool/call", {**ts, "callId": cid, "name": "bash", "arguments": arguments})
        for i in range(OUTPUTS):
            line = {**ts, "callId": cid, "stream": "stdout", "text": output_texts[(turn + i) % 64]}
            emit("tool/output", line)
        emit("tool/result", {**ts, "callId": cid, "isError": False, "content": "exit status 0"})
        emit("step/end", ts)
        if turn < turns:
            emit("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        chunk_bytes = b"".join(buf)
        buf.clear()
        out.write(chunk_bytes)
        size += len(chunk_bytes)
    return size, seq


def make_log(path: Path, turns: int) -> tuple[int, int]:
    """Write the log to ``path``; ``(file bytes, events)``."""
    with path.open("wb") as f:
        _, events = write_log(f, turns)
    return path.stat().st_size, events
