"""Real processes, real SIGKILL: torture, two processes, a kill in the middle of repair.

Children come from a fork server (store_child.py) so a round costs a fork, not an interpreter
start. Nothing here measures time; random sleeps only choose where the kill lands.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from store_helpers import Zygote, assert_valid_balanced, read_log, sha256
from store_workload import workload

from trio_agent.log import Event, check_events, encode_event, repair_closers
from trio_agent.store import JsonlStore, Session, SessionLocked, repair_file

ROUNDS = int(os.environ.get("TRIO_AGENT_TORTURE_ROUNDS", "0"))


@pytest.fixture
def zygote() -> Iterator[Zygote]:
    z = Zygote()
    try:
        yield z
    finally:
        z.close()


def _killed(status: int) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _check_round(path: Path, messages: list[list[str]]) -> tuple[int, int]:
    """After a kill: cold open, and check everything the brief promises. Returns
    ``(events before repair, closers appended)``."""
    if not path.exists():  # killed before its create published the file
        assert not any(m[0] == "ack" for m in messages)
        return 0, 0
    header, events, _torn, lines = read_log(path)
    check_events(events)  # every complete line is a valid event: a kill leaves no garbage
    expected_closers = repair_closers(events)

    # Every acknowledged event is present, unchanged.
    ready = [m for m in messages if m[0] == "ready"]
    acks = [m for m in messages if m[0] == "ack"]
    if acks:
        start = int(ready[0][2])
        seq, digest = int(acks[-1][2]), acks[-1][3]
        assert seq < len(events), f"acknowledged seq {seq} is not on disk ({len(events)} events)"
        h = hashlib.sha256()
        for line in lines[start : seq + 1]:
            h.update(line + b"\n")
        assert h.hexdigest() == digest, "an acknowledged event changed"

    async def reopen() -> list[Event]:
        async with JsonlStore(path.parent.parent, reap_orphans=None) as store:
            session = await store.open(path.parent.name)
            got = list(session.events)
            await session.aclose()
            return got

    got = trio.run(reopen)
    assert got == events + expected_closers
    after = assert_valid_balanced(path)
    assert after == got
    # The committed prefix is byte-for-byte what it was; the torn tail is gone.
    raw = path.read_bytes()
    prefix = header + b"\n" + b"".join(line + b"\n" for line in lines)
    assert raw == prefix + b"".join(encode_event(e) for e in expected_closers)
    if expected_closers:
        _check_placeholders(events, expected_closers)
    return len(events), len(expected_closers)


def _check_placeholders(events: list[Event], closers: list[Event]) -> None:
    assert closers[-1].type == "turn/end"
    assert closers[-1].data["reason"] == {"kind": "interrupted"}
    dispatched = {e.data["callId"] for e in events if e.type == "tool/call"}
    for e in closers:
        if e.type == "tool/result":
            code = e.data["error"]["code"]
            want = "TOOL_OUTCOME_UNKNOWN" if e.data["callId"] in dispatched else "TOOL_NOT_STARTED"
            assert code == want and e.data["isError"] is True


def _torture(tmp_path: Path, zygote: Zygote, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "root"
    kills = repaired = 0
    for n in range(rounds):
        sid = f"t{n // 25}"  # a fresh log every 25 rounds keeps each check small
        pid = zygote.start(
            op="torture", root=str(root), id=sid, tag=f"r{n}", seed=rng.randrange(2**32),
            window=rng.choice([0.0, 0.001, 0.003, 0.02]), turns=rng.randint(1, 6),
        )
        first = [zygote.wait(pid, "ready")] if rng.random() < 0.9 else []
        time.sleep(rng.random() * rng.choice([0.002, 0.01, 0.03]))
        zygote.kill(pid)
        status, messages = zygote.reap(pid)
        messages = first + messages
        errors = [m for m in messages if m[0] == "error"]
        assert not errors, " ".join(errors[0])
        kills += _killed(status)
        _, closers = _check_round(root / sid / "session.jsonl", messages)
        repaired += closers > 0
    # The kills must really have landed mid-work, not only after the children finished.
    assert kills >= rounds // 2
    assert repaired >= 1


def test_kill9_torture(tmp_path: Path, zygote: Zygote) -> None:
    _torture(tmp_path, zygote, rounds=60, seed=20261202)


@pytest.mark.slow
@pytest.mark.skipif(ROUNDS == 0, reason="set TRIO_AGENT_TORTURE_ROUNDS (make torture)")
def test_kill9_torture_long(tmp_path: Path, zygote: Zygote) -> None:
    _torture(tmp_path, zygote, rounds=ROUNDS, seed=random.randrange(2**32))


def test_second_process_is_refused_then_repairs_after_kill(tmp_path: Path, zygote: Zygote) -> None:
    root = tmp_path / "root"
    holder = zygote.start(op="hold", root=str(root), id="s", tag="h")
    ready = zygote.wait(holder, "ready")
    assert ready[0] == "ready", ready
    path = root / "s" / "session.jsonl"
    before = sha256(path)

    # A second process (a fresh child) is refused at once, naming the session and the holder.
    probe = zygote.start(op="torture", root=str(root), id="s", tag="p", seed=1, window=0, turns=1)
    msg = zygote.wait(probe, "ready")
    assert msg[0] == "error" and "SessionLocked" in " ".join(msg)
    assert f"locked by process {holder}" in " ".join(msg)
    zygote.reap(probe)
    assert sha256(path) == before

    # So is this one (another process than the holder), through every entry point.
    async def refused() -> None:
        async with JsonlStore(root, reap_orphans=None) as store:
            with pytest.raises(SessionLocked, match=f"'s' is live .*process {holder}"):
                await store.open("s")
            with pytest.raises(SessionLocked):
                await repair_file(path)
            with pytest.raises(SessionLocked):
                await repair_file(path, write=False)
            events = await store.inspect("s")  # live elsewhere: as is, no closers
            assert events[-1].type == "tool/call"

    trio.run(refused)
    assert sha256(path) == before

    zygote.kill(holder)
    status, _ = zygote.reap(holder)
    assert _killed(status)

    async def repairs() -> Session:
        async with JsonlStore(root, reap_orphans=None) as store:
            session = await store.open("s")
            assert session.events[-1].data["reason"]["kind"] == "interrupted"
            dispatched = [e for e in session.events if e.type == "tool/call"][-1].data["callId"]
            codes = {
                e.data["callId"]: e.data.get("error", {}).get("code")
                for e in session.events
                if e.type == "tool/result"
            }
            assert codes[dispatched] == "TOOL_OUTCOME_UNKNOWN"
            session.append("turn/start", {"turn": session.checker.last_turn + 1})
            await session.flush()
            return session

    trio.run(repairs)
    check_events(read_log(path)[1])  # repaired, then continued: valid, turn 3 open


def _damaged_log(path: Path) -> None:
    """A log with an open turn (dispatched and undispatched calls) and a torn tail."""
    rng = random.Random(7)
    s = Session.in_memory("s", clock=lambda: 1234)
    for type_, data, _ in workload(rng, 1, "a", 2):
        s.append(type_, data)
    for type_, data, _ in workload(rng, 3, "b", 1, max_steps=3):
        s.append(type_, data)
        if type_ == "tool/call":
            break
    assert s.open_turn is not None and s.checker.unanswered_calls()
    text = b'{"type":"session","version":1,"id":"s","createdAt":1}\n'
    text += b"".join(encode_event(e) for e in s.events)
    path.write_bytes(text + b'{"seq":999,"ti')


POINTS = [
    "repair:truncated",
    "repair:truncate-synced",
    "repair:closers-written",
    "repair:closers-synced",
]


def _expected_repair(tmp_path: Path, template: Path) -> bytes:
    clean = tmp_path / "expected" / "session.jsonl"
    clean.parent.mkdir()
    shutil.copy(template, clean)
    report = trio.run(lambda: repair_file(clean, reap_orphans=None))
    assert report.closers and report.torn_bytes > 0
    return clean.read_bytes()


@pytest.mark.parametrize("point", POINTS)
def test_kill_at_a_named_point_of_repair(tmp_path: Path, zygote: Zygote, point: str) -> None:
    template = tmp_path / "template.jsonl"
    _damaged_log(template)
    expected = _expected_repair(tmp_path, template)
    target = tmp_path / "s" / "session.jsonl"
    target.parent.mkdir()
    shutil.copy(template, target)
    pid = zygote.start(op="repair", path=str(target), kill_at=point)
    status, messages = zygote.reap(pid)
    assert _killed(status), messages
    assert ["point", str(pid), point] in messages
    trio.run(lambda: repair_file(target, reap_orphans=None))
    assert target.read_bytes() == expected
    second = trio.run(lambda: repair_file(target, reap_orphans=None))  # idempotent
    assert not second.changed and target.read_bytes() == expected


def test_kill_at_random_moments_of_repair(tmp_path: Path, zygote: Zygote) -> None:
    template = tmp_path / "template.jsonl"
    _damaged_log(template)
    expected = _expected_repair(tmp_path, template)
    target = tmp_path / "s" / "session.jsonl"
    target.parent.mkdir()
    shutil.copy(template, target)
    rng = random.Random(99)
    states = set()
    for n in range(16):
        # Short writes (a few bytes per syscall) stretch the closers' write over many calls,
        # so the kill lands inside it as often as around it. The file is NOT reset between
        # rounds: each kill interrupts a repair of whatever the previous kill left.
        pid = zygote.start(op="repair", path=str(target), short=True, seed=n)
        zygote.wait(pid, "point")  # repair:scanned, nothing changed yet
        time.sleep(rng.random() * 0.012)
        zygote.kill(pid)
        _status, messages = zygote.reap(pid)
        assert not [m for m in messages if m[0] == "error"], messages
        states.add(target.read_bytes())
        if rng.random() < 0.5:  # sometimes repair to the end before the next kill
            trio.run(lambda: repair_file(target, reap_orphans=None))
            assert target.read_bytes() == expected
            shutil.copy(template, target)
    trio.run(lambda: repair_file(target, reap_orphans=None))
    assert target.read_bytes() == expected
    assert len(states) > 1  # the kills did land at different places
