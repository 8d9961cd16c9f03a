"""The file commands: exit codes, one-line errors, never a traceback (spec/cli.md)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from support.cli import cli, one_line

from trio_agent.cli import main
from trio_agent.log import Header, encode_event, encode_header
from trio_agent.testing.loggen import generate_log

HEADER = encode_header(Header("s1", 1_700_000_000_000))


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, body: bytes, name: str = "s.jsonl") -> str:
    path = tmp_path / name
    path.write_bytes(body)
    return str(path)


@pytest.fixture
def crashed(tmp_path: Path) -> str:
    """A log cut inside an open step, with a dispatched call and a torn last line."""
    events = generate_log(7, 3)
    return write(tmp_path, HEADER + b"".join(map(encode_event, events[:-9])) + b'{"seq":')


def test_check_ok_and_open_turn_note(crashed: str) -> None:
    code, out, err = run("check", crashed)
    assert code == 0
    assert out.strip().endswith("ok (72 events, 3 turns)")
    assert f"{crashed}:74: note: torn tail ignored" in err
    assert "turn 3 is open" in err


def test_check_balanced_flag_makes_open_turn_an_error(crashed: str) -> None:
    code, _, err = run("check", "--balanced", crashed)
    assert code == 1
    assert "turn 3 is open" in err


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", ":1: the file is empty"),
        (b'{"type":"other"}\n', ":1: not a trio_agent session log"),
        (b"\xef\xbb\xbf" + HEADER, ":1: the header is not JSON (UTF-8 byte order mark (BOM)"),
        (
            b'{"type":"session","version":2,"id":"x","createdAt":0}\n',
            ":1: written by a newer log format",
        ),
        (b'{"type":"session","version":1,"id":"x","createdAt":-1}\n', ":1: header.createdAt"),
        (HEADER + b"{not json}\n", ":2: not JSON"),
    ],
)
def test_unreadable_input_exits_2(tmp_path: Path, body: bytes, expected: str) -> None:
    path = write(tmp_path, body)
    code, out, err = run("check", path)
    assert code == 2
    assert err == f"{path}{expected}" + err[len(path) + len(expected) :]
    assert err.count("\n") == 1 and out == ""


def test_missing_file_exits_2(tmp_path: Path) -> None:
    code, _, err = run("check", str(tmp_path / "nope.jsonl"))
    assert (code, err) == (2, f"{tmp_path / 'nope.jsonl'}: no such file\n")


def test_rule_violation_is_one_line_with_rule_seq_and_line(tmp_path: Path) -> None:
    body = HEADER + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'
    body += b'{"seq":1,"time":1,"type":"turn/start","data":{"turn":2}}\n'
    path = write(tmp_path, body)
    code, _, err = run("check", path)
    assert code == 1
    assert err == f"{path}:3: seq 1: I2: turn/start 2 while turn 1 is open\n"


def test_invalid_event_is_rule_i0_not_unreadable(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + b'{"seq":0,"time":1,"type":"turn/begin","data":{}}\n')
    code, _, err = run("check", path)
    assert code == 1
    assert err == f'{path}:2: seq 0: I0: type: unknown event type "turn/begin"\n'


def test_worst_exit_code_over_several_files(tmp_path: Path, crashed: str) -> None:
    bad = write(tmp_path, b"garbage\n", "bad.jsonl")
    code, out, err = run("check", crashed, bad)
    assert code == 2
    assert "ok (72 events" in out and "bad.jsonl:1:" in err


def test_repair_prints_closers_that_balance_the_log(crashed: str) -> None:
    code, out, _ = run("repair", crashed)
    assert code == 0
    closers = [json.loads(line) for line in out.splitlines()]
    assert [c["type"] for c in closers] == ["step/end", "turn/end"]
    assert closers[-1]["data"] == {"turn": 3, "reason": {"kind": "interrupted"}}
    assert [c["seq"] for c in closers] == [72, 73]


def test_repair_prints_the_very_lines_that_repair_write_appends(crashed: str) -> None:
    body = Path(crashed).read_bytes()
    code, printed, _ = run("repair", crashed)
    assert code == 0 and printed
    code, written, _ = run("repair", "--write", "--no-reap", crashed)
    assert code == 0 and written == printed
    kept = body[: body.rindex(b"\n") + 1]  # the torn last line is cut
    assert Path(crashed).read_bytes() == kept + printed.encode()


def test_repair_boot_id_describes_a_dry_run_only(crashed: str) -> None:
    code, out, err = run("repair", "--write", "--boot-id", "b", crashed)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--boot-id only describes a dry run" in err


def test_repair_of_balanced_log_prints_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + b"".join(map(encode_event, generate_log(3, 4))))
    assert run("repair", path) == (0, "", "")


def test_repair_and_fold_refuse_a_broken_log(tmp_path: Path) -> None:
    # The damage comes before a committed turn/end: corruption, not a torn tail.
    body = HEADER + b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}\n'
    body += b'{"seq":1,"time":1,"type":"step/end","data":{"turn":1,"step":1}}\n'
    body += (
        b'{"seq":2,"time":1,"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}\n'
    )
    path = write(tmp_path, body)
    where = "turn 1 is open with no step open"
    for command in ("repair", "fold", "truncate"):
        code, out, err = run(command, path)
        assert (code, out) == (1, ""), command
        assert err == f"{path}:3: seq 1: I8: step/end names turn 1 step 1; {where}\n"
    # show shows what comes before the offending line, marks it, and exits 1 too.
    code, out, err = run("show", "--no-color", path)
    assert code == 1
    assert err == f"{path}:3: seq 1: I8: step/end names turn 1 step 1; {where}\n"
    assert out.splitlines() == [
        "session s1  created 2023-11-14 22:13:20Z  1 event",
        "[0] turn/start 1",
        f"!! line 3: seq 1: I8: step/end names turn 1 step 1; {where}",
        '   {"seq":1,"time":1,"type":"step/end","data":{"turn":1,"step":1}}',
    ]


def test_repair_treats_garbage_after_last_turn_end_as_torn_tail(tmp_path: Path) -> None:
    events = generate_log(5, 2)
    path = write(tmp_path, HEADER + b"".join(map(encode_event, events)) + b"\x00garbage\n")
    code, out, err = run("check", path)
    assert code == 2  # check is strict about garbage anywhere
    code, out, err = run("repair", path)
    assert (code, out) == (0, "")
    assert "torn tail ignored" in err


def test_fold_and_truncate_output(crashed: str) -> None:
    code, out, _ = run("fold", crashed)
    assert code == 0 and json.loads(out) == {"end_seq": 34, "dropped_unrun": False}
    code, out, _ = run("truncate", crashed)
    report = json.loads(out)
    assert code == 0 and report["turn"] == 3 and report["keptEvents"] == 37
    assert report["droppedEvents"] == 35 and report["toolOutputBytes"] > 0


def test_show_marks_synthetic_closers(crashed: str) -> None:
    code, out, _ = run("show", "--no-color", crashed)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("session s1")
    assert "INTERRUPTED" in lines[-2] and "repair would append" in lines[-2]
    assert "torn tail ignored" in lines[-1]


def test_console_entry_point_has_no_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + b"[1, 2]\n")
    assert one_line(cli("check", path), 1) == f"{path}:2: seq ?: I0: an event must be a JSON object"
    assert one_line(cli("frobnicate"), 2)
