"""Setup shared by the store tests of both backends (test_contract.py) and of one
(test_jsonl.py, test_writer.py): a counting clock, workload turns, an open turn, the writer."""

from __future__ import annotations

import random

from support.store.workload import workload
from trio_agent.store import Session
from trio_agent.store.writer import Writer


class Clock:
    """A store clock that answers 1001, 1002, ...: every stamp is distinct and predictable."""

    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


def play(session: Session, turns: int, seed: int = 0) -> None:
    """Append ``turns`` complete workload turns (seeded) after the session's last turn."""
    rng = random.Random(seed)
    for type_, data, _ in workload(rng, session.checker.last_turn + 1, f"x{seed}", turns):
        session.append(type_, data)


def open_turn(session: Session) -> None:
    """Start the next turn and its first step, and leave them open."""
    n = session.checker.last_turn + 1
    session.append("turn/start", {"turn": n})
    session.append("step/start", {"turn": n, "step": 1})


def writer_of(session: Session) -> Writer:
    """The session's write-behind writer (its sink)."""
    sink = session._sink
    assert isinstance(sink, Writer)
    return sink
