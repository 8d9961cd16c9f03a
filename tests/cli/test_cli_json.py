"""``check --json``, ``show --json`` and ``show --full`` (spec/cli.md §`show --full` and JSON
output): the real CLI as a subprocess on good, torn, broken and live logs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from support.cli import cli as run_cli, no_traceback
from support.cli.testlib import holding
from support.polling import HANG_GUARD

from trio_agent.cli import main
from trio_agent.log import Event, Header, encode_event, encode_header
from trio_agent.testing.loggen import generate_log

HEADER = encode_header(Header("s1", 1_700_000_000_000))
CHECK_KEYS = [
    "path",
    "ok",
    "exit",
    "events",
    "turns",
    "open_turn",
    "torn_tail",
    "live",
    "rule",
    "seq",
    "line",
    "message",
]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command line, asserted free of a traceback on every call in this file."""
    return no_traceback(run_cli(*argv))


def records(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def write(tmp_path: Path, body: bytes, name: str = "s.jsonl") -> str:
    path = tmp_path / name
    path.write_bytes(HEADER + body)
    return str(path)


def good_log(tmp_path: Path) -> tuple[str, list[Event]]:
    events = generate_log(7, 3)
    return write(tmp_path, b"".join(map(encode_event, events)), "good.jsonl"), events


def torn_log(tmp_path: Path) -> str:
    """Cut inside an open step of turn 3, with a torn last line."""
    events = generate_log(7, 3)[:-9]
    return write(tmp_path, b"".join(map(encode_event, events)) + b'{"seq":', "torn.jsonl")


BROKEN_BODY = (
    b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'
    b'{"seq":1,"time":1,"type":"step/end","data":{"turn":1,"step":1}}\n'
    b'{"seq":2,"time":1,"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}\n'
)
I8 = "step/end names turn 1 step 1; turn 1 is open with no step open"


def test_check_json_good_torn_broken_and_unreadable_one_object_each(tmp_path: Path) -> None:
    good, events = good_log(tmp_path)
    torn = torn_log(tmp_path)
    broken = write(tmp_path, BROKEN_BODY, "broken.jsonl")
    not_json = write(tmp_path, b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n{no\n')
    missing = str(tmp_path / "missing.jsonl")
    proc = cli("check", "--json", good, torn, broken, not_json, missing)
    assert proc.returncode == 2  # the worst over all FILEs, as without --json
    got = records(proc)
    assert [list(r) for r in got] == [CHECK_KEYS] * 5
    assert got[0] == {
        **dict.fromkeys(CHECK_KEYS),
        "path": good,
        "ok": True,
        "exit": 0,
        "events": len(events),
        "turns": 3,
        "live": False,
    }
    assert got[1]["ok"] and got[1]["open_turn"] == 3 and got[1]["events"] == 72
    tail = got[1]["torn_tail"]
    assert tail["line"] == 74 and tail["bytes"] == len(b'{"seq":') and tail["reason"]
    assert got[2] == {
        **dict.fromkeys(CHECK_KEYS),
        "path": broken,
        "ok": False,
        "exit": 1,
        "live": False,
        "rule": "I8",
        "seq": 1,
        "line": 3,
        "message": I8,
    }
    assert got[3]["exit"] == 2 and got[3]["line"] == 3 and got[3]["rule"] is None
    assert got[3]["message"].startswith("not JSON")
    assert got[4]["exit"] == 2 and got[4]["line"] is None and "no such file" in got[4]["message"]
    # stderr is what it is without --json.
    plain = cli("check", good, torn, broken, not_json, missing)
    assert (plain.returncode, plain.stderr) == (proc.returncode, proc.stderr)


def test_check_json_of_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    """JSON holds only text: a name's bytes that are not UTF-8 are written ``\\xNN`` (once
    an internal error, exit 70, since orjson refuses the lone surrogates Python carries)."""
    good = os.fsdecode(os.fsencode(tmp_path) + b"/good\xff.jsonl")
    Path(good).write_bytes(HEADER)
    missing = os.fsdecode(os.fsencode(tmp_path) + b"/gone\xfe.jsonl")
    proc = no_traceback(run_cli(b"check", b"--json", os.fsencode(good), os.fsencode(missing)))
    assert proc.returncode == 2
    got = records(proc)
    assert [(r["path"], r["exit"]) for r in got] == [
        (f"{tmp_path}/good\\xff.jsonl", 0),
        (f"{tmp_path}/gone\\xfe.jsonl", 2),
    ]
    assert got[1]["message"] == f"{tmp_path}/gone\\xfe.jsonl: no such file"


def test_check_json_balanced_names_the_open_turn(tmp_path: Path) -> None:
    torn = torn_log(tmp_path)
    proc = cli("check", "--json", "--balanced", torn)
    assert proc.returncode == 1
    (got,) = records(proc)
    assert (got["ok"], got["exit"], got["open_turn"], got["line"]) == (False, 1, 3, 74)
    assert got["rule"] is None and "turn 3 is open" in got["message"]


def test_show_json_good_log_is_its_events(tmp_path: Path) -> None:
    good, events = good_log(tmp_path)
    proc = cli("show", "--json", good)
    assert (proc.returncode, proc.stderr) == (0, "")
    got = records(proc)
    assert got[0] == {
        "kind": "header",
        "session": "s1",
        "created_at": 1_700_000_000_000,
        "events": len(events),
        "live": False,
    }
    lines = Path(good).read_bytes().splitlines()[1:]
    assert got[1:] == [{"kind": "event", "event": json.loads(line)} for line in lines]


def test_show_json_torn_log_marks_the_closers_and_the_tail(tmp_path: Path) -> None:
    torn = torn_log(tmp_path)
    proc = cli("show", "--json", torn)
    assert proc.returncode == 0
    got = records(proc)
    assert got[0]["events"] == 72
    assert [r["kind"] for r in got[1:73]] == ["event"] * 72
    repair = cli("repair", torn)
    closers = [json.loads(line) for line in repair.stdout.splitlines()]
    assert closers, "an open turn has closers"
    assert got[73:-1] == [{"kind": "closer", "event": c} for c in closers]
    assert got[-1] == {
        "kind": "torn_tail",
        "line": 74,
        "bytes": 7,
        "reason": got[-1]["reason"],
    }


def test_show_json_broken_log_ends_at_the_violation(tmp_path: Path) -> None:
    broken = write(tmp_path, BROKEN_BODY, "broken.jsonl")
    proc = cli("show", "--json", broken)
    assert proc.returncode == 1
    assert proc.stderr == f"{broken}:3: seq 1: I8: {I8}\n"
    got = records(proc)
    assert got[0]["events"] == 1
    assert got[1] == {"kind": "event", "event": json.loads(BROKEN_BODY.splitlines()[0])}
    assert got[2:] == [
        {
            "kind": "violation",
            "line": 3,
            "rule": "I8",
            "seq": 1,
            "message": I8,
            "exit": 1,
            "text": BROKEN_BODY.splitlines()[1].decode(),
        }
    ]


def test_show_json_not_json_line_is_a_violation_without_rule(tmp_path: Path) -> None:
    body = BROKEN_BODY.splitlines(keepends=True)
    path = write(tmp_path, body[0] + b"{no\n" + body[2])
    proc = cli("show", "--json", path)
    assert proc.returncode == 2
    last = records(proc)[-1]
    assert (last["kind"], last["rule"], last["line"], last["exit"]) == ("violation", None, 3, 2)
    assert last["text"] == "{no"


def test_show_json_of_an_unreadable_header_prints_nothing(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"type":"other"}\n')
    proc = cli("show", "--json", str(path))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.count("\n") == 1


@pytest.fixture
def held(tmp_path: Path) -> Iterator[str]:
    with holding(tmp_path) as live:
        yield live.path


def test_json_on_a_live_session(held: str) -> None:
    check = cli("check", "--json", held)
    assert check.returncode == 0
    (got,) = records(check)
    assert (got["ok"], got["live"], got["open_turn"], got["events"]) == (True, True, 1, 2)
    show = cli("show", "--json", held)
    assert show.returncode == 0
    got_show = records(show)
    assert got_show[0]["live"] is True and got_show[0]["events"] == 2
    assert [r["kind"] for r in got_show[1:]] == ["event", "event"]  # no closers when live
    assert "is live" in show.stderr


def long_output_log(tmp_path: Path) -> tuple[str, str]:
    """A valid log whose first tool output is long and spans lines."""
    text = "".join(f"line {i} of a long tool output\n" for i in range(40))
    events = generate_log(7, 3)
    i = next(i for i, e in enumerate(events) if e.type == "tool/output")
    events[i] = attrs.evolve(events[i], data={**events[i].data, "text": text})
    return write(tmp_path, b"".join(map(encode_event, events))), text


def test_show_full_prints_long_fields_whole(tmp_path: Path) -> None:
    path, text = long_output_log(tmp_path)
    whole = text.replace("\n", "⏎")
    cut = cli("show", "--no-color", path)
    assert cut.returncode == 0 and whole not in cut.stdout and "…" in cut.stdout
    full = cli("show", "--no-color", "--full", path)
    assert full.returncode == 0
    assert sum(line.endswith(f'"{whole}"') for line in full.stdout.splitlines()) == 1


def test_show_full_prints_a_long_offending_line_whole(tmp_path: Path) -> None:
    long_text = "x" * 300
    bad = (
        b'{"seq":1,"time":1,"type":"step/end","data":{"turn":1,"step":1,"pad":"'
        + long_text.encode()
        + b'"}}\n'
    )
    body = BROKEN_BODY.splitlines(keepends=True)
    path = write(tmp_path, body[0] + bad + body[2])
    cut = cli("show", "--no-color", path)
    assert cut.returncode == 1 and long_text not in cut.stdout
    full = cli("show", "--no-color", "--full", path)
    assert full.returncode == 1
    assert full.stdout.splitlines()[-1] == "   " + bad.decode().rstrip("\n")


# -- show --json streams: memory does not grow with the log --------------------------------


def big_log(tmp_path: Path, outputs: int) -> str:
    ts = {"turn": 1, "step": 1}

    def lines() -> Iterator[bytes]:
        yield encode_event(Event(0, 1, "turn/start", {"turn": 1}))
        yield encode_event(Event(1, 1, "step/start", ts))
        call = {**ts, "callId": "c", "name": "bash", "arguments": {}}
        yield encode_event(Event(2, 1, "tool/call", call))
        for seq in range(3, 3 + outputs):
            data = {**ts, "callId": "c", "stream": "stdout", "text": "y" * 40}
            yield encode_event(Event(seq, 1, "tool/output", data))

    return write(tmp_path, b"".join(lines()), f"big{outputs}.jsonl")


class _Discard(io.StringIO):
    def write(self, s: str) -> int:
        return len(s)


def _peak(path: str, *argv: str) -> int:
    tracemalloc.start()
    try:
        assert main(["show", *argv, path], _Discard(), io.StringIO()) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_show_streams_whatever_the_log_size(tmp_path: Path) -> None:
    small, large = big_log(tmp_path, 200), big_log(tmp_path, 20_000)
    for argv in (["--json"], ["--full", "--no-color"]):
        peak_small, peak_large = _peak(small, *argv), _peak(large, *argv)
        # 100x the events, the same peak give or take allocator noise: nothing kept per line.
        assert peak_large - peak_small < 256 * 1024, (argv, peak_small, peak_large)


# The file commands' cost on a small log is mostly start-up: they import the pure core and
# nothing that runs a trio loop (the store, the runtime, trio itself are never needed).
_LOADED = """
import sys
from trio_agent.cli import main
code = main(sys.argv[1:])
print(sorted({m.split(".")[0] for m in sys.modules} & {"trio", "hypothesis", "psycopg", "httpx"}))
print(sorted(m for m in sys.modules if m.startswith(("trio_agent.store", "trio_agent.runtime"))))
raise SystemExit(code)
"""


def _loads_nothing_heavy(*argv: str) -> None:
    """``trio-agent ARGV`` succeeds without importing trio, the store or the runtime."""
    proc = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["[]", "[]"], proc.stdout[-400:]


@pytest.mark.parametrize("command", ["check", "show", "repair", "fold", "truncate"])
def test_the_file_commands_import_neither_trio_nor_the_store(tmp_path: Path, command: str) -> None:
    path, _ = good_log(tmp_path)
    _loads_nothing_heavy(command, path)


@pytest.mark.parametrize(
    "argv", [["--help"], ["run", "--help"], ["serve", "--help"], ["harness", "--help"]]
)
def test_help_imports_neither_trio_nor_the_store(argv: list[str]) -> None:
    """The parser names each command's module and imports it only to run it: asking for
    help, even of the commands that run trio, loads none of it."""
    _loads_nothing_heavy(*argv)
