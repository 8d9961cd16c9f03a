"""Cold open: torn tails are cut and closed, corruption is refused with the file untouched."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
import trio
from hypothesis import given, strategies as st
from support.polling import HANG_GUARD, until
from support.proc import has_env, in_group, tagged
from support.store.helpers import assert_valid_balanced, sha256
from support.store.workload import workload

from trio_agent.log import (
    OTHER_HOST_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    REAPED_TEXTS,
    Event,
    Header,
    Orphan,
    Reaping,
    encode_event,
    encode_header,
    event_to_json,
    repair_closers,
)
from trio_agent.store import (
    JsonlStore,
    Session,
    SessionCorrupt,
    SessionNotFound,
    UnsupportedFormat,
    repair_file,
)
from trio_agent.store.recovery import cold_scan
from trio_agent.testing.loggen import generate_log

HEADER = b'{"type":"session","version":1,"id":"s","createdAt":1}\n'


def build(turns: int = 3, *, open_tail: bool = True, seed: int = 5) -> tuple[bytes, list[Event]]:
    """A log of ``turns`` complete turns, then (``open_tail``) a turn stopped mid-tool."""
    rng = random.Random(seed)
    s = Session.in_memory("s", clock=lambda: 77)
    for type_, data, _ in workload(rng, 1, "a", turns):
        s.append(type_, data)
    if open_tail:
        for type_, data, _ in workload(rng, turns + 1, "b", 1, max_steps=3):
            s.append(type_, data)
            if type_ == "tool/output":
                break
        assert s.open_turn is not None
    events = list(s.events)
    return HEADER + b"".join(encode_event(e) for e in events), events


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "s" / "session.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def lines_of(data: bytes) -> list[int]:
    """Offsets where each line starts."""
    starts = [0]
    for i, b in enumerate(data):
        if b == 0x0A and i + 1 < len(data):
            starts.append(i + 1)
    return starts


async def cold_open(path: Path) -> list[Event]:
    async with JsonlStore(path.parent.parent, reap_orphans=None) as store:
        session = await store.open(path.parent.name)
        events = list(session.events)
        await session.aclose()
    return events


# -- torn tails ---------------------------------------------------------------------------------


@pytest.mark.parametrize("open_tail", [True, False])
async def test_every_cut_inside_the_last_two_lines_is_recovered(
    tmp_path: Path, open_tail: bool
) -> None:
    data, events = build(open_tail=open_tail)
    starts = lines_of(data)
    first = starts[-2]
    for n, cut in enumerate(range(first, len(data) + 1)):
        piece = data[:cut]
        path = write(tmp_path / str(n), piece)
        kept_bytes = piece.rfind(b"\n") + 1
        kept = events[: len(piece[:kept_bytes].split(b"\n")) - 2]
        closers = repair_closers(kept)
        # Most cuts go through repair_file; every 7th through the store's cold open.
        if n % 7 == 0:
            got = await cold_open(path)
        else:
            report = await repair_file(path, reap_orphans=None)
            assert report.torn_bytes == cut - kept_bytes and report.closers == closers
            got = kept + report.closers
        assert got == kept + closers
        assert path.read_bytes() == piece[:kept_bytes] + b"".join(encode_event(e) for e in closers)
        assert_valid_balanced(path)


async def test_garbage_and_bad_events_after_the_last_turn_end_are_a_torn_tail(
    tmp_path: Path,
) -> None:
    data, events = build(open_tail=True)
    last_end = max(i for i, e in enumerate(events) if e.type == "turn/end")
    starts = lines_of(data)
    # Break the line two events after the last turn/end; the valid lines after it go too.
    bad_line = last_end + 3  # index into the file's lines (line 0 is the header)
    for damage in (b"\x00\x00\x00 not json", b'{"seq":1,"time":0,"type":"turn/start","data":{}}'):
        broken = data[: starts[bad_line]] + damage + b"\n" + data[starts[bad_line] :]
        path = write(tmp_path / str(len(damage)), broken)
        before = sha256(path)
        inspected = await _inspect(path)
        assert sha256(path) == before  # inspect changes nothing
        report = await repair_file(path, reap_orphans=None)
        kept = events[: bad_line - 1]
        assert report.dropped_lines == len(events) - len(kept) + 1
        assert report.damage is not None and f"line {bad_line + 1}" in report.damage
        assert report.closers == repair_closers(kept)
        assert assert_valid_balanced(path) == kept + report.closers == inspected


async def test_a_seq_gap_after_the_last_turn_end_is_a_torn_tail(tmp_path: Path) -> None:
    data, events = build(open_tail=True)
    starts = lines_of(data)
    last_end = max(i for i, e in enumerate(events) if e.type == "turn/end")
    gap = last_end + 3  # drop the event at this index
    path = write(tmp_path, data[: starts[gap + 1]] + data[starts[gap + 2] :])
    report = await repair_file(path, reap_orphans=None)
    assert report.damage is not None and "expected seq" in report.damage
    assert assert_valid_balanced(path)[:gap] == events[:gap]


# -- corruption ---------------------------------------------------------------------------------


def _damages(data: bytes, events: list[Event]) -> list[tuple[str, bytes, str | None]]:
    """(name, damaged file, expected rule) — every damage at or before the last turn/end."""
    starts = lines_of(data)
    last_end = max(i for i, e in enumerate(events) if e.type == "turn/end")
    line_of = {i: i + 1 for i in range(len(events))}  # event index -> file line index
    out: list[tuple[str, bytes, str | None]] = []

    def replace(index: int, new: bytes) -> bytes:
        li = line_of[index]
        return data[: starts[li]] + new + data[starts[li + 1] :]

    mid = last_end // 2
    line = data[starts[line_of[mid]] : starts[line_of[mid] + 1]]
    out.append(("flipped brace", replace(mid, b"[" + line[1:]), "I0"))
    out.append(("not json", replace(mid, b"garbage\n"), "I0"))
    out.append(("seq changed", replace(mid, line.replace(b'"seq":', b'"seq":9', 1)), "I1"))
    out.append(("line deleted", replace(mid, b""), "I1"))
    out.append(("unknown type", replace(mid, line.replace(b'"type":"', b'"type":"x', 1)), "I0"))
    end_line = data[starts[line_of[last_end]] : starts[line_of[last_end] + 1]]
    wrong_turn = end_line.replace(b'{"turn":', b'{"turn":9', 1)
    out.append(("the last turn/end itself", replace(last_end, wrong_turn), None))
    # A single flipped byte anywhere in the first event's envelope.
    first = data[starts[1] : starts[2]]
    for k in range(0, 12):
        flipped = bytearray(first)
        flipped[k] ^= 0x20
        out.append((f"flip byte {k}", replace(0, bytes(flipped)), None))
    return out


async def test_damage_before_the_last_turn_end_is_corruption_and_changes_nothing(
    tmp_path: Path,
) -> None:
    data, events = build(open_tail=True)
    for n, (name, damaged, rule) in enumerate(_damages(data, events)):
        path = write(tmp_path / str(n), damaged)
        before = sha256(path)
        for attempt in ("open", "repair", "dry", "inspect"):
            with pytest.raises(SessionCorrupt) as info:
                if attempt == "open":
                    await cold_open(path)
                elif attempt == "repair":
                    await repair_file(path, reap_orphans=None)
                elif attempt == "dry":
                    await repair_file(path, write=False)
                else:
                    await _inspect(path)
            message = str(info.value)
            assert "\n" not in message and str(path) in message and "not modified" in message, name
            assert info.value.line is not None and info.value.line >= 2, name
            if rule is not None:
                assert info.value.rule == rule, (name, message)
            assert sha256(path) == before, (name, attempt)


async def _inspect(path: Path) -> list[Event]:
    async with JsonlStore(path.parent.parent, reap_orphans=None) as store:
        return await store.inspect(path.parent.name)


# -- headers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "words"),
    [
        (b'{"type":"session","version":2,"id":"s","createdAt":1}\n', "newer"),
        (b'{"type":"session","version":0,"id":"s","createdAt":1}\n', "older"),
        (b'{"type":"other"}\n', "not a trio_agent session log"),
        (b"nope\n", "not JSON"),
        (b"\xef\xbb\xbf" + HEADER, "not JSON .UTF-8 byte order mark"),
        (b"", "empty"),
        (b'{"type":"session","vers', "incomplete"),
    ],
)
async def test_foreign_headers_are_refused_unchanged(
    tmp_path: Path, header: bytes, words: str
) -> None:
    body = b"" if not header.endswith(b"\n") else build(1)[0][len(HEADER) :]
    path = write(tmp_path, header + body)
    before = sha256(path)
    with pytest.raises(UnsupportedFormat, match=words):
        await cold_open(path)
    with pytest.raises(UnsupportedFormat, match=words):
        await repair_file(path)
    assert sha256(path) == before


async def test_header_naming_another_session_is_refused(tmp_path: Path) -> None:
    data, _ = build(1)
    path = write(tmp_path, data.replace(b'"id":"s"', b'"id":"other"', 1))
    with pytest.raises(SessionCorrupt, match="names session 'other'"):
        await cold_open(path)
    report = await repair_file(path, reap_orphans=None)  # a bare file has no expected id
    assert report.session_id == "other"


async def test_repair_file_reports_and_dry_run_changes_nothing(tmp_path: Path) -> None:
    data, events = build(open_tail=True)
    path = write(tmp_path, data + b'{"seq":')
    before = sha256(path)
    dry = await repair_file(path, write=False)
    assert sha256(path) == before and not dry.written
    assert dry.torn_bytes == 7 and dry.closers == repair_closers(events)
    assert dry.events == len(events) + len(dry.closers)
    report = await repair_file(path, reap_orphans=None)
    assert report.written and report.closers == dry.closers and report.torn_bytes == 7
    assert report.to_json()["closers"][-1]["data"]["reason"] == {"kind": "interrupted"}
    again = await repair_file(path, reap_orphans=None)
    assert not again.changed and again.closers == []
    with pytest.raises(SessionNotFound):
        await repair_file(tmp_path / "missing.jsonl")


def test_scan_log_is_pure() -> None:
    data, events = build(open_tail=True)
    scan = cold_scan(data + b"xx", "mem")
    assert scan.events == events and scan.torn and scan.dropped_bytes == 2
    assert scan.keep == len(data) and scan.checker.open_turn is not None


# -- orphaned process groups --------------------------------------------------------------------


def _spawned_log(tmp_path: Path, pgid: int, identity: str) -> tuple[Path, str]:
    s = Session.in_memory("s", clock=lambda: 5)
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    block = {"type": "tool-call", "id": "c1", "name": "shell", "arguments": {"cmd": "sleep"}}
    block2 = {"type": "tool-call", "id": "c2", "name": "shell", "arguments": {}}
    message = {"id": "m", "content": [block, block2]}
    s.append("assistant/message", {"turn": 1, "step": 1, "message": message})
    call = {"turn": 1, "step": 1, "callId": "c1", "name": "shell", "arguments": {"cmd": "sleep"}}
    s.append("tool/call", call)
    spawned = {"turn": 1, "step": 1, "callId": "c1", "pgid": pgid, "identity": identity}
    s.append("tool/spawned", spawned)
    data = HEADER + b"".join(encode_event(e) for e in s.events)
    return write(tmp_path, data), "c1"


async def test_the_reaper_hook_gets_the_orphans_and_its_answer_reaches_the_placeholder(
    tmp_path: Path,
) -> None:
    _path, cid = _spawned_log(tmp_path, 4242, "boot:99")
    seen: list[object] = []

    async def reaper(orphans: list[Orphan]) -> Reaping:
        seen.append(orphans)
        return Reaping({cid: "stopped"})

    async with JsonlStore(tmp_path, reap_orphans=reaper) as store:
        session = await store.open("s")
        results = {e.data["callId"]: e for e in session.events if e.type == "tool/result"}
    assert seen == [[Orphan("c1", 4242, "boot:99")]]
    assert results["c1"].data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert results["c1"].data["content"].endswith(REAPED_TEXTS["stopped"])
    assert results["c2"].data["error"]["code"] == "TOOL_NOT_STARTED"


async def _until_marked(pid: int, marker: str) -> None:
    """Until ``pid`` has exec'd: before that, /proc shows the parent's environment, which has
    no marker, so recovery could not yet prove the process ours."""
    from trio_agent.procs import census

    await until(lambda: has_env(pid, census.MARKER_VAR, marker))


async def test_the_default_reaper_stops_a_real_orphaned_group(tmp_path: Path) -> None:
    from trio_agent.procs import census, orphans

    # What a crashed runtime's tool looks like: its own session, the call's marker in its
    # environment, recorded in tool/spawned's identity.
    marker = census.new_marker()
    proc = await trio.lowlevel.open_process(
        ["sleep", "60"], start_new_session=True, env={**os.environ, census.MARKER_VAR: marker}
    )
    try:
        await _until_marked(proc.pid, marker)
        identity = f"{census.process_identity(proc.pid)}:{marker}"
        _path, _ = _spawned_log(tmp_path, proc.pid, identity)
        async with JsonlStore(tmp_path, reap_orphans=orphans.reap_orphans) as store:
            session = await store.open("s")
            result = next(e for e in session.events if e.type == "tool/result")
        assert result.data["content"].endswith(REAPED_TEXTS["stopped"])
        with trio.fail_after(HANG_GUARD):  # the group was signalled before open returned
            await proc.wait()
        assert proc.returncode is not None and proc.returncode < 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_an_orphan_of_another_host_is_left_alone_and_the_placeholder_says_so(
    tmp_path: Path,
) -> None:
    """The record names another boot id (the session continued on another host): recovery
    cannot stop that host's group or prove it ended, so it signals nothing, even though a
    process here matches the pid, start time and marker; the placeholder says where the tool
    may still run (spec/recovery.md R5, other host)."""
    from trio_agent.procs import census, orphans

    marker = census.new_marker()
    proc = await trio.lowlevel.open_process(
        ["sleep", "60"], start_new_session=True, env={**os.environ, census.MARKER_VAR: marker}
    )
    try:
        await _until_marked(proc.pid, marker)
        here = census.process_identity(proc.pid)
        assert here is not None
        other_boot = "00000000-0000-4000-8000-00000000b007"
        assert other_boot != census.boot_id()
        _, start = census.parse_identity(here)
        path, _ = _spawned_log(tmp_path, proc.pid, f"{other_boot}:{start}:{marker}")
        report = await repair_file(path, reap_orphans=orphans.reap_orphans)
        result = next(e for e in report.closers if e.type == "tool/result")
        assert result.data["error"] == {"code": "TOOL_OUTCOME_UNKNOWN"}
        assert result.data["content"] == OUTCOME_UNKNOWN_TEXT.format(
            name="shell", call_id="c1"
        ) + OTHER_HOST_TEXT.format(boot_id=other_boot)
        content = result.data["content"]
        assert "another host (boot id 00000000-0000-4000-8000-00000000b007)" in content
        assert report.reaped == {}
        # Nothing was signalled: the process that matches everything but the boot id runs on.
        assert proc.returncode is None and in_group(proc.pid) == [proc.pid]
        assert list(tagged(census.MARKER_VAR, marker)) == [proc.pid]
        # Repairing the repaired log yields nothing more.
        assert not (await repair_file(path, reap_orphans=orphans.reap_orphans)).changed
    finally:
        proc.kill()
        await proc.wait()


async def test_a_finished_orphan_of_this_host_gets_todays_placeholder(tmp_path: Path) -> None:
    """Same host and boot, the group already gone: the plain R4 text, no R5 sentence."""
    from trio_agent.procs import census, orphans

    marker = census.new_marker()
    proc = await trio.lowlevel.open_process(
        ["true"], start_new_session=True, env={**os.environ, census.MARKER_VAR: marker}
    )
    identity = f"{census.process_identity(proc.pid)}:{marker}"
    await proc.wait()
    path, _ = _spawned_log(tmp_path, proc.pid, identity)
    report = await repair_file(path, reap_orphans=orphans.reap_orphans)
    result = next(e for e in report.closers if e.type == "tool/result")
    assert result.data["content"] == OUTCOME_UNKNOWN_TEXT.format(name="shell", call_id="c1")


@pytest.mark.parametrize("forged", ["no-marker", "wrong-marker"])
async def test_a_forged_record_never_gets_a_strangers_group_killed(
    tmp_path: Path, forged: str
) -> None:
    """A log is untrusted input: naming another process group and its real start time is not
    proof that we started it (spec/tools.md §9)."""
    from trio_agent.procs import census, orphans

    # An unrelated `setsid sleep`: its own session and group, nothing of ours.
    stranger = await trio.lowlevel.open_process(["sleep", "60"], start_new_session=True)
    try:
        identity = census.process_identity(stranger.pid)
        assert identity is not None
        if forged == "wrong-marker":
            identity = f"{identity}:{census.new_marker()}"
        path, _ = _spawned_log(tmp_path, stranger.pid, identity)
        report = await repair_file(path, reap_orphans=orphans.reap_orphans)
        result = next(e for e in report.closers if e.type == "tool/result")
        assert not result.data["content"].endswith(REAPED_TEXTS["stopped"])
        assert stranger.returncode is None and in_group(stranger.pid)
        assert census.carries_marker(stranger.pid, "0" * 16) is False
    finally:
        stranger.kill()
        await stranger.wait()


# -- the spec's torn/ vectors -------------------------------------------------------------------

VECTORS = sorted((Path(__file__).resolve().parents[2] / "spec" / "vectors").rglob("*.json"))
STORE_VECTORS = [p for p in VECTORS if '"store"' in p.read_text()]


@pytest.mark.parametrize("vector", STORE_VECTORS, ids=lambda p: f"{p.parent.name}/{p.stem}")
async def test_store_classification_matches_the_vectors(tmp_path: Path, vector: Path) -> None:
    case = json.loads(vector.read_text())
    data = b"".join(line.encode() + b"\n" for line in case["log"])
    data += case.get("torn", "").encode()
    want = case["expect"]["store"]
    path = write(tmp_path, data)
    before = sha256(path)
    if want["damage"] == "corruption":
        with pytest.raises(SessionCorrupt) as info:
            await repair_file(path, reap_orphans=None)
        assert info.value.line == want["line"]
        assert sha256(path) == before
        return
    report = await repair_file(path, reap_orphans=None)
    assert [event_to_json(e) for e in report.closers] == want["closers"]
    assert report.events == want["kept_events"] + len(want["closers"])
    if want["damage"] == "none":
        assert report.torn_bytes == 0 and report.damage is None
    else:
        assert report.torn_bytes > 0 and f"line {want['line']}:" in (report.damage or "")
    assert_valid_balanced(path)


_DAMAGE = [b"garbage\n", b"{}\n", b'{"seq":999,"time":1,"type":"turn/start","data":{"turn":9}}\n']


@given(st.integers(0, 2**32), st.data())
def test_a_cold_scan_s_figures_are_those_of_its_bytes(seed: int, data: st.DataObject) -> None:
    """What is kept, read and dropped, counted from the bytes themselves (the scan counts
    them as it reads): damage after the last turn/end, complete or torn, is the tail."""
    events = generate_log(seed, 2)
    balanced = encode_header(Header("s", 0)) + b"".join(map(encode_event, events))
    extra = b"".join(data.draw(st.lists(st.sampled_from(_DAMAGE), max_size=3), label="damage"))
    torn = data.draw(st.sampled_from([b"", b'{"seq', b"x"]), label="torn")
    raw = balanced + extra + torn
    scan = cold_scan(raw, "mem")
    assert scan.size == len(raw)
    tail = raw[scan.keep :]
    assert scan.dropped_lines == tail.count(b"\n")
    assert scan.torn == (not raw.endswith(b"\n"))
    assert scan.keep == len(balanced) and len(scan.events) == len(events)
