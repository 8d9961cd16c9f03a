"""Real processes, real SIGKILL: torture (over both backends), two processes, a kill in the
middle of repair.

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
from typing import Any

import attrs
import psycopg
import pytest
import trio
from support.polling import until_sync
from support.store.helpers import Zygote, read_log, sha256
from support.store.pg import wait_lease_lapsed
from support.store.workload import workload

from trio_agent.log import Event, check_events, decode_event, encode_event, repair_closers
from trio_agent.store import JsonlStore, PostgresStore, Session, SessionLocked, Store, repair_file
from trio_agent.store.checkpoints import sidecar_of

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


@attrs.frozen
class Stored:
    """A session as stored: header line, complete event lines in order, torn tail, and (for
    the database) the transaction that wrote each line."""

    header: bytes
    lines: list[bytes]
    torn: bytes = b""
    txids: list[int] | None = None

    def events(self) -> list[Event]:
        # Every complete line is a valid event: a kill leaves no garbage.
        return [decode_event(line, n) for n, line in enumerate(self.lines, start=2)]


class JsonlSide:
    """The torture's view of ``JsonlStore``: session ``sid`` is the file root/sid/session.jsonl."""

    name = "jsonl"
    spread = 1.0  # scales the random sleep before the kill

    def __init__(self, root: Path) -> None:
        self.root = root

    def child_args(self, n: int) -> dict[str, Any]:
        return {"root": str(self.root)}

    def settle(self, sid: str, n: int) -> None:
        """Nothing to wait for: the killed child's writes are in the page cache already."""

    def stored(self, sid: str) -> Stored | None:
        path = self.root / sid / "session.jsonl"
        if not path.exists():  # killed before its create published the file
            return None
        raw = path.read_bytes()
        header, _events, torn, lines = read_log(path)
        assert raw == header + b"\n" + b"".join(line + b"\n" for line in lines) + torn
        return Stored(header, lines, torn)

    def reopen(self, sid: str) -> list[Event]:
        return trio.run(_reopen, JsonlStore(self.root, reap_orphans=None), sid)


class PostgresSide:
    """The torture's view of ``PostgresStore``: rows of one throwaway database, read here with
    plain SQL (not through the store), each with the id of the transaction that wrote it."""

    name = "postgres"
    lease = 0.2  # short: each round waits, on the database clock, for the dead child's to lapse
    spread = 4.0  # a batch is a transaction with an fsync: spread the kills over more of them

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def child_args(self, n: int) -> dict[str, Any]:
        return {"dsn": f"{self.dsn} application_name=kill9-r{n}", "lease": self.lease}

    def settle(self, sid: str, n: int) -> None:
        """Wait until the killed child's server connections are gone: a COMMIT it sent just
        before the kill is then decided (the server finishes what it received, then sees the
        closed socket), so nothing can change behind the checks. Then wait for its lease."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:

            def gone() -> bool:
                return conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                    (f"kill9-r{n}",),
                ).fetchone() == (0,)

            until_sync(gone, period=0.002)
            exists = _header(conn, sid) is not None
        if exists:
            trio.run(wait_lease_lapsed, self.dsn, sid)

    def stored(self, sid: str) -> Stored | None:
        with psycopg.connect(self.dsn) as conn:
            header = _header(conn, sid)
            if header is None:  # killed before its create committed
                return None
            got = conn.execute(
                "SELECT seq, line, xmin::text::bigint FROM trio_agent_event "
                "WHERE session_id = %s ORDER BY seq",
                (sid,),
            ).fetchall()
        assert [seq for seq, _, _ in got] == list(range(len(got))), "the seqs have a gap"
        return Stored(header, [bytes(r[1]) for r in got], b"", [r[2] for r in got])

    def reopen(self, sid: str) -> list[Event]:
        return trio.run(_reopen, PostgresStore(self.dsn, lease=self.lease, reap_orphans=None), sid)


Side = JsonlSide | PostgresSide


async def _reopen(store: Store, sid: str) -> list[Event]:
    """Open ``sid`` cold (which repairs it), close it; its events as the open returned them."""
    async with store:
        session = await store.open(sid)
        got = list(session.events)
        await session.aclose()
    return got


def _header(conn: psycopg.Connection[Any], sid: str) -> bytes | None:
    """The session's header row; None if it is not stored (or, the first child killed before
    it made the tables, if there are no tables yet)."""
    exists = conn.execute("SELECT to_regclass('trio_agent_session') IS NOT NULL").fetchone()
    if exists != (True,):
        return None
    row = conn.execute(
        "SELECT header FROM trio_agent_session WHERE session_id = %s", (sid,)
    ).fetchone()
    return None if row is None else bytes(row[0])


def _check_batches(stored: Stored, start: int, batches: list[list[str]]) -> bool:
    """A batch is one transaction: the rows from ``start`` on, cut where the writing
    transaction changes, are exactly the first batches the child announced, each whole.
    True if the kill landed inside one (announced, not committed)."""
    assert stored.txids is not None
    announced = [(int(m[2]), int(m[3])) for m in batches]
    groups: list[tuple[int, int]] = []
    for seq in range(start, len(stored.lines)):
        if groups and stored.txids[seq] == stored.txids[seq - 1]:
            groups[-1] = (groups[-1][0], groups[-1][1] + 1)
        else:
            groups.append((seq, 1))
    assert groups == announced[: len(groups)], f"partial batch: rows {groups}, batches {announced}"
    return len(announced) > len(groups)


@attrs.define
class Tally:
    kills: int = 0  # children that died of the SIGKILL (not finished first)
    repaired: int = 0  # rounds whose reopen appended closers
    in_batch: int = 0  # kills that landed inside a batch transaction (database)


def _check_round(
    side: Side, sid: str, messages: list[list[str]], before: Stored | None, tally: Tally
) -> Stored | None:
    """After a kill: cold open, and check what it promises (spec/persistence.md §5,
    spec/recovery.md): every acknowledged event kept, exactly the closers appended. ``before``
    is the session as the previous round left it. Returns the session as this round leaves it."""
    acks = [m for m in messages if m[0] == "ack"]
    stored = side.stored(sid)
    if stored is None:
        assert before is None and not acks
        return None
    if before is not None:  # what earlier rounds left is untouched
        assert stored.header == before.header
        assert stored.lines[: len(before.lines)] == before.lines
    events = stored.events()
    check_events(events)
    expected_closers = repair_closers(events)

    # Every acknowledged event is present, unchanged, in order.
    ready = [m for m in messages if m[0] == "ready"]
    if not ready:  # killed in its open or create: nothing written
        assert stored.lines == ([] if before is None else before.lines)
    elif stored.txids is not None:
        batches = [m for m in messages if m[0] == "batch"]
        tally.in_batch += _check_batches(stored, int(ready[0][2]), batches)
    if acks:
        start = int(ready[0][2])
        seq, digest = int(acks[-1][2]), acks[-1][3]
        assert seq < len(events), f"acknowledged seq {seq} is not stored ({len(events)} events)"
        h = hashlib.sha256()
        for line in stored.lines[start : seq + 1]:
            h.update(line + b"\n")
        assert h.hexdigest() == digest, "an acknowledged event changed"

    got = side.reopen(sid)
    assert got == events + expected_closers
    after = side.stored(sid)
    assert after is not None
    # The committed prefix is byte-for-byte what it was, the torn tail is gone, and repair
    # appended exactly the closers: valid and balanced.
    assert after.header == stored.header and after.torn == b""
    assert after.lines == stored.lines + [encode_event(e)[:-1] for e in expected_closers]
    assert after.events() == got
    assert check_events(got).open_turn is None, "a repaired log is balanced"
    if expected_closers:
        _check_placeholders(events, expected_closers)
        if after.txids is not None:  # repair is one transaction of its own
            assert len(set(after.txids[len(events) :])) == 1
            assert not events or after.txids[len(events)] != after.txids[len(events) - 1]
    tally.repaired += bool(expected_closers)
    return after


def _check_placeholders(events: list[Event], closers: list[Event]) -> None:
    assert closers[-1].type == "turn/end"
    assert closers[-1].data["reason"] == {"kind": "interrupted"}
    dispatched = {e.data["callId"] for e in events if e.type == "tool/call"}
    for e in closers:
        if e.type == "tool/result":
            code = e.data["error"]["code"]
            want = "TOOL_OUTCOME_UNKNOWN" if e.data["callId"] in dispatched else "TOOL_NOT_STARTED"
            assert code == want and e.data["isError"] is True


def _torture(side: Side, zygote: Zygote, rounds: int, seed: int) -> Tally:
    rng = random.Random(seed)
    tally = Tally()
    before: Stored | None = None
    for n in range(rounds):
        sid = f"t{n // 25}"  # a fresh log every 25 rounds keeps each check small
        if n % 25 == 0:
            before = None
        pid = zygote.start(
            op="torture",
            id=sid,
            tag=f"r{n}",
            seed=rng.randrange(2**32),
            window=rng.choice([0.0, 0.001, 0.003, 0.02]),
            turns=rng.randint(1, 6),
            **side.child_args(n),
        )
        first = [zygote.wait(pid, "ready")] if rng.random() < 0.9 else []
        time.sleep(rng.random() * rng.choice([0.002, 0.01, 0.03]) * side.spread)
        zygote.kill(pid)
        status, messages = zygote.reap(pid)
        messages = first + messages
        errors = [m for m in messages if m[0] == "error"]
        assert not errors, " ".join(errors[0])
        tally.kills += _killed(status)
        side.settle(sid, n)
        before = _check_round(side, sid, messages, before, tally)
    if rounds >= 50:  # too few rounds can all land at quiet moments by chance
        # The kills must really have landed mid-work, not only after the children finished.
        assert tally.kills >= rounds // 2
        assert tally.repaired >= 1
        if isinstance(side, PostgresSide):  # and some inside a batch's transaction
            assert tally.in_batch >= 1
    return tally


def _report(
    capsys: pytest.CaptureFixture[str], name: str, rounds: int, tally: Tally, in_batch: bool
) -> None:
    with capsys.disabled():
        print(
            f"\nkill -9 torture ({name}): {rounds} rounds, {tally.kills} killed mid-work, "
            f"{tally.repaired} repaired"
            + (f", {tally.in_batch} killed inside a batch transaction" if in_batch else "")
        )


#: Rounds in ``make test`` and under ``make torture``. The database's are capped: each costs a
#: lease lapse and a few transactions with fsync (300 rounds took 71 s on the 2-core test host).
BACKENDS = {"jsonl": (60, ROUNDS), "postgres": (6, min(ROUNDS, 300))}


def _side(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Side:
    if backend == "jsonl":
        return JsonlSide(tmp_path / "root")
    return PostgresSide(request.getfixturevalue("pg_dsn"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_kill9_torture(
    tmp_path: Path, zygote: Zygote, request: pytest.FixtureRequest, backend: str
) -> None:
    side = _side(backend, tmp_path, request)
    _torture(side, zygote, rounds=BACKENDS[backend][0], seed=20261202)


@pytest.mark.slow
@pytest.mark.skipif(ROUNDS == 0, reason="set TRIO_AGENT_TORTURE_ROUNDS (make torture)")
@pytest.mark.parametrize("backend", BACKENDS)
def test_kill9_torture_long(
    tmp_path: Path,
    zygote: Zygote,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    backend: str,
) -> None:
    side = _side(backend, tmp_path, request)
    rounds = BACKENDS[backend][1]
    seed = random.randrange(2**32)
    tally = _torture(side, zygote, rounds=rounds, seed=seed)
    _report(capsys, f"{backend}, seed {seed}", rounds, tally, isinstance(side, PostgresSide))


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


@pytest.mark.parametrize("nth", [1, 2])
@pytest.mark.parametrize("point", ["checkpoint:written", "checkpoint:renamed"])
def test_kill_while_recording_a_checkpoint(
    tmp_path: Path, zygote: Zygote, point: str, nth: int
) -> None:
    """spec/persistence.md §5.1: after a kill -9 at any step of recording a checkpoint, the
    sidecar is the old checkpoint or the new one, whole; the next open uses it or scans
    everything, and ends with every acknowledged event, as a full scan of the same file
    does; the dead writer's temporary file is removed."""
    root = tmp_path / "root"
    pid = zygote.start(
        op="checkpointed", root=str(root), id="s", seed=nth, turns=40, kill_at=point, nth=nth
    )
    status, messages = zygote.reap(pid)
    assert _killed(status), messages
    acked = max(int(m[2]) for m in messages if m[0] == "ack")
    log = root / "s" / "session.jsonl"
    sidecar = sidecar_of(log)
    had = sidecar.exists()
    assert had == (point == "checkpoint:renamed" or nth == 2)
    left = [p.name for p in log.parent.iterdir() if p.name.endswith(".tmp")]
    assert bool(left) == (point == "checkpoint:written")
    copy = tmp_path / "copy"
    shutil.copytree(log.parent, copy / "s")
    (copy / "s" / sidecar.name).unlink(missing_ok=True)

    async def reopen(where: Path) -> list[Event]:
        async with JsonlStore(where, reap_orphans=None, checkpoint_every=2000) as store:
            session = await store.open("s")
            events = list(session.events)
            await session.aclose()
        return events

    events = trio.run(reopen, root)
    assert events == trio.run(reopen, copy)
    assert log.read_bytes() == (copy / "s" / "session.jsonl").read_bytes()
    assert len(events) > acked
    assert [p.name for p in log.parent.iterdir() if p.name.endswith(".tmp")] == []
