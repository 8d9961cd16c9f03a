"""A cold open resumed from a checkpoint (spec/persistence.md §5.1): the writer records one
at balanced points, the next open reads only the tail after it and ends in exactly the state
and the file a full scan gives; every checkpoint that does not describe the log as it is
(missing, unreadable, torn, unsupported, truncated, mismatched, copied) means a full scan,
said in the store's log."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.checker_state import checker_state
from support.store.helpers import ENOSPC, FaultyOps, assert_valid_balanced
from support.store.workload import workload

from trio_agent.log import Event, checkpoint as ck, encode_event, fold_consumed_work, scan_log
from trio_agent.store import JsonlStore, Session
from trio_agent.store.checkpoints import file_identity, sidecar_of
from trio_agent.store.errors import PrefixChanged
from trio_agent.store.write_policy import CheckpointCadence

#: Small enough that a few turns record several checkpoints.
EVERY = 2000


def append_turns(session: Session, first: int, turns: int, seed: int) -> None:
    rng = random.Random(seed)
    for type_, data, _ in workload(rng, first, f"t{first}", turns):
        session.append(type_, data)


async def make_session(root: Path, turns: int = 12, *, every: int | None = EVERY) -> Path:
    """A closed session ``s`` of ``turns`` turns, its checkpoints recorded every ``every``."""
    async with JsonlStore(root, reap_orphans=None, checkpoint_every=every) as store:
        session = await store.create("s")
        append_turns(session, 1, turns, seed=turns)
        await session.aclose()
    return root / "s" / "session.jsonl"


async def reopen(
    root: Path, caplog: pytest.LogCaptureFixture, every: int | None = EVERY
) -> tuple[list[Event], tuple[Any, ...], str]:
    """Open ``s`` cold, close it; its events, checker state, and what the store said."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trio_agent.store"):
        async with JsonlStore(root, reap_orphans=None, checkpoint_every=every) as store:
            session = await store.open("s")
            events = list(session.events)
            held = checker_state(session.checker)
            await session.aclose()
    return events, held, caplog.text


def full_scan(path: Path) -> tuple[list[Event], tuple[Any, ...]]:
    scan = scan_log(path.read_bytes(), strict=False)
    return scan.events, checker_state(scan.checker)


def sidecar(path: Path) -> ck.Checkpoint:
    return ck.decode(sidecar_of(path).read_bytes())


async def test_a_long_session_records_a_checkpoint_at_a_balanced_point(tmp_path: Path) -> None:
    path = await make_session(tmp_path)
    cp = sidecar(path)
    data = path.read_bytes()
    assert 0 < cp.offset <= len(data)
    prefix = scan_log(data[: cp.offset])
    assert prefix.tail is None and prefix.checker.open_turn is None
    assert prefix.events[-1].type == "turn/end" and cp.seq == len(prefix.events)
    assert checker_state(ck.restore(cp))[:3] == checker_state(prefix.checker)[:3]
    fd = os.open(path, os.O_RDONLY)
    try:
        assert cp.file_id == file_identity(fd)
    finally:
        os.close(fd)


async def test_no_checkpoint_below_the_cadence(tmp_path: Path) -> None:
    path = await make_session(tmp_path, turns=12, every=10**9)
    assert not sidecar_of(path).exists()
    path2 = await make_session(tmp_path / "off", turns=12, every=None)
    assert not sidecar_of(path2).exists()


async def test_the_open_resumes_from_it_and_holds_exactly_the_full_scans_state(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = await make_session(tmp_path)
    cp = sidecar(path)
    events, held, said = await reopen(tmp_path, caplog)
    assert f"resumed from the checkpoint at byte {cp.offset}" in said
    assert (events, held) == full_scan(path)


async def test_the_resumed_session_reads_its_prefix_from_the_file_and_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = await make_session(tmp_path)
    cp = sidecar(path)
    expected, _ = full_scan(path)
    async with JsonlStore(tmp_path, reap_orphans=None, checkpoint_every=EVERY) as store:
        session = await store.open("s")
        events = session.events
        assert events._events.held == len(expected) - cp.seq  # type: ignore[attr-defined]
        assert events[0] == expected[0] and events[cp.seq - 1] == expected[cp.seq - 1]
        assert events[-1] == expected[-1] and list(reversed(events)) == expected[::-1]
        assert list(events[3 : cp.seq + 2]) == expected[3 : cp.seq + 2]
        assert session.fold_consumed_work() == fold_consumed_work(expected)
        append_turns(session, session.checker.last_turn + 1, 6, seed=99)
        await session.aclose()
    after = assert_valid_balanced(path)
    assert after[: len(expected)] == expected
    assert sidecar(path).offset > cp.offset  # the writer went on recording


async def test_a_crash_after_the_checkpoint_is_repaired_as_a_full_scan_would(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = await make_session(tmp_path)
    # A turn cut short by a crash: an open turn and a torn line after the checkpoint.
    before = scan_log(path.read_bytes()).events
    crashed = Session.in_memory("s", events=before)
    rng = random.Random(3)
    for type_, data, _ in workload(rng, crashed.checker.last_turn + 1, "x", 1):
        crashed.append(type_, data)
        if type_ == "user/message":
            break
    tail = b"".join(encode_event(e) for e in list(crashed.events)[len(before) :])
    with open(path, "ab") as f:
        f.write(tail + b'{"seq":')
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "s", copy / "s")
    os.unlink(sidecar_of(copy / "s" / "session.jsonl"))

    events, held, said = await reopen(tmp_path, caplog)
    assert "resumed from the checkpoint" in said
    events2, held2, said2 = await reopen(copy, caplog)
    assert "resumed" not in said2
    assert (events, held) == (events2, held2)
    assert path.read_bytes() == (copy / "s" / "session.jsonl").read_bytes()
    assert events[-1].type == "turn/end" and events[-1].data["reason"]["kind"] == "interrupted"


def _rewrite_sidecar(path: Path, **changes: Any) -> None:
    body = json.loads(sidecar_of(path).read_bytes())
    del body["digest"]
    body.update(changes)
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body["digest"] = hashlib.sha256(canonical.encode()).hexdigest()
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    sidecar_of(path).write_text(text + "\n")


def _missing(path: Path) -> None:
    os.unlink(sidecar_of(path))


def _unreadable(path: Path) -> None:
    os.unlink(sidecar_of(path))
    os.mkdir(sidecar_of(path))


def _torn(path: Path) -> None:
    data = sidecar_of(path).read_bytes()
    sidecar_of(path).write_bytes(data[: len(data) // 2])


def _unsupported(path: Path) -> None:
    _rewrite_sidecar(path, format="trio-agent-checkpoint/99")


def _truncated(path: Path) -> None:
    """The log cut back to an earlier balanced point (as ``trio-agent truncate`` does)."""
    data = path.read_bytes()
    events = scan_log(data).events
    ends = [i for i, e in enumerate(events) if e.type == "turn/end"]
    keep = data.split(b"\n")[: ends[1] + 2]
    path.write_bytes(b"\n".join(keep) + b"\n")
    assert len(path.read_bytes()) < sidecar(path).offset


def _mismatched(path: Path) -> None:
    """The checkpoint of another log of the same session id put in this one's place."""
    _rewrite_sidecar(path, lastLine=hashlib.sha256(b"another line\n").hexdigest())


def _copied(path: Path) -> None:
    """The session directory copied, sidecar and all: the copy is another file."""
    copy = path.parent.with_name("s-copy")
    shutil.copytree(path.parent, copy)
    shutil.rmtree(path.parent)
    os.rename(copy, path.parent)


DAMAGE = {
    ck.MISSING: _missing,
    ck.UNREADABLE: _unreadable,
    ck.TORN: _torn,
    ck.UNSUPPORTED: _unsupported,
    ck.TRUNCATED: _truncated,
    ck.MISMATCHED: _mismatched,
    ck.COPIED: _copied,
}


def test_every_refusal_reason_is_exercised() -> None:
    assert set(DAMAGE) == set(ck.REASONS)


@pytest.mark.parametrize("reason", ck.REASONS)
async def test_a_checkpoint_that_does_not_describe_the_log_means_a_full_scan(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, reason: str
) -> None:
    path = await make_session(tmp_path)
    DAMAGE[reason](path)
    expected = full_scan(path)
    events, held, said = await reopen(tmp_path, caplog)
    assert "resumed" not in said
    if reason == ck.MISSING:
        assert "checkpoint not used" not in said
    else:
        assert f"checkpoint not used ({reason}:" in said
    assert (events, held) == expected
    if reason == ck.UNREADABLE:  # a directory in the sidecar's place: nothing replaces it
        assert "checkpoint not recorded" in said
        return
    # The open read everything and recorded a checkpoint of the log as it is now.
    assert sidecar(path).offset == len(path.read_bytes())
    _, _, again = await reopen(tmp_path, caplog)
    assert "resumed from the checkpoint" in again


async def test_a_checkpoint_that_cannot_be_written_is_skipped_and_the_log_is_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class FailingSidecar(FaultyOps):
        def write(self, fd: int, data: bytes | memoryview) -> int:
            if ".checkpoint." in os.readlink(f"/proc/self/fd/{fd}"):
                raise OSError(ENOSPC, os.strerror(ENOSPC))
            return super().write(fd, data)

    with caplog.at_level(logging.WARNING, logger="trio_agent.store"):
        async with JsonlStore(
            tmp_path, reap_orphans=None, checkpoint_every=EVERY, file_ops=FailingSidecar()
        ) as store:
            session = await store.create("s")
            append_turns(session, 1, 12, seed=12)
            await session.aclose()
    assert "checkpoint not recorded" in caplog.text
    assert not sidecar_of(tmp_path / "s" / "session.jsonl").exists()
    assert [p.name for p in (tmp_path / "s").iterdir() if p.name.endswith(".tmp")] == []
    assert len(assert_valid_balanced(tmp_path / "s" / "session.jsonl")) > 100


async def test_a_prefix_changed_under_a_resumed_session_is_an_error_not_wrong_events(
    tmp_path: Path,
) -> None:
    path = await make_session(tmp_path)
    cp = sidecar(path)
    async with JsonlStore(tmp_path, reap_orphans=None, checkpoint_every=EVERY) as store:
        session = await store.open("s")
        await session.aclose()
    os.truncate(path, cp.offset // 2)  # another program cut the file after the session closed
    with pytest.raises(PrefixChanged, match="the log changed on disk"):
        list(session.events)
    with pytest.raises(PrefixChanged):
        session.events[cp.seq - 1]


def test_the_cadence_spaces_checkpoints_by_bytes_and_by_their_own_size() -> None:
    cadence = CheckpointCadence(every=100)
    assert not cadence.due(99) and cadence.due(100)
    cadence.taken(100)
    assert not cadence.due(199) and cadence.due(200)
    cadence.recorded(50)  # a checkpoint of 50 bytes: the next at least 200 bytes later
    assert not cadence.due(299) and cadence.due(300)


async def test_a_whole_sidecar_whose_state_is_wrong_cuts_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sidecar resealed with a seq one too low (another program's, or a bug's): were it
    used, the tail's first event would look like a gap and repair could cut committed
    turns. It is refused; the full scan keeps every event."""
    path = await make_session(tmp_path)
    cp = sidecar(path)
    _rewrite_sidecar(path, seq=cp.seq - 1)
    before, _ = full_scan(path)
    events, _, said = await reopen(tmp_path, caplog)
    assert "checkpoint not used (mismatched:" in said
    assert events == before  # a balanced log: nothing cut, nothing added


async def test_a_log_ending_outside_a_turn_gets_no_checkpoint_at_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A checkpoint ends at a turn/end; a log whose last event is a message queued after it
    is not recorded at open (it would be refused at every open after)."""
    async with JsonlStore(tmp_path, reap_orphans=None, checkpoint_every=None) as store:
        session = await store.create("s")
        append_turns(session, 1, 12, seed=5)
        message = {"id": "late", "text": "later", "source": "user"}
        session.append(
            "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [message]}
        )
        await session.aclose()
    path = tmp_path / "s" / "session.jsonl"
    assert len(path.read_bytes()) > EVERY
    events, _, said = await reopen(tmp_path, caplog)
    assert "checkpoint not used" not in said and events[-1].type == "agent/inbox/spliced"
    assert not sidecar_of(path).exists()


async def test_a_prefix_line_rewritten_under_a_session_is_an_error_when_read(
    tmp_path: Path,
) -> None:
    """A prefix line replaced by garbage of the same length (the file's size, header and
    last line unchanged) is not seen at open; reading it raises PrefixChanged, naming it."""
    path = await make_session(tmp_path)
    data = path.read_bytes()
    start = data.index(b"\n") + 1
    second = data.index(b"\n", start) + 1  # the line of seq 1 starts here
    end = data.index(b"\n", second)
    path.write_bytes(data[:second] + b"x" * (end - second) + data[end:])
    async with JsonlStore(tmp_path, reap_orphans=None, checkpoint_every=EVERY) as store:
        session = await store.open("s")
        assert session.events[0].seq == 0
        with pytest.raises(PrefixChanged, match="line 3 is no longer event seq 1"):
            session.events[1]
        with pytest.raises(PrefixChanged):
            list(session.events)
        await session.aclose()
