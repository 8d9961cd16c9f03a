"""The harness protocol's shapes: the driver's cattrs checks and the published JSON Schema
(spec/schema/harness/) agree with each other and with our adapter server's real traffic, and
a malformed message is refused with the field named."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.schemas import valid

from trio_agent.testing.protocol import AdapterError
from trio_agent.testing.wire import (
    SCHEMA_DIR,
    check_journal,
    check_reply,
    check_request,
    json_schemas,
)

ROOT = Path(__file__).resolve().parents[2]


JOURNAL = json.loads((SCHEMA_DIR / "journal.schema.json").read_text())
REPLY = json.loads((SCHEMA_DIR / "reply.schema.json").read_text())
REQUEST = json.loads((SCHEMA_DIR / "request.schema.json").read_text())


def test_the_published_schemas_are_the_generated_ones() -> None:
    for name, schema in json_schemas().items():
        on_disk = json.loads((SCHEMA_DIR / name).read_text())
        assert on_disk == schema, f"regenerate: python -m trio_agent.testing.wire ({name})"


def _reply_valid(reply: dict[str, Any], op: str) -> bool:
    if not valid(reply, REPLY, REPLY):
        return False
    result_schema = REPLY["$defs"]["results"].get(op)
    if result_schema is None or not reply["ok"] or reply["crashed"]:
        return True
    return bool(valid(reply["result"], result_schema, REPLY))


def _traffic(tmp_path: Path, requests: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Run our adapter server on ``requests``; every line it wrote, with the op it answered."""
    log = tmp_path / "s" / "session.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r).replace("LOG", str(log)) + "\n" for r in requests)
    done = subprocess.run(
        [sys.executable, "-m", "trio_agent.testing.adapter_server"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    ops = iter(r["op"] for r in requests)
    op = next(ops)
    out = []
    for obj in lines:
        out.append((op, obj))
        if "reply" in obj:
            op = next(ops, "")
    return out


CANCEL = {"kind": "cancel", "cause": "user", "keep_inbox": False}
REQUESTS: list[dict[str, Any]] = [
    {"op": "hello"},
    {"op": "start", "log": "LOG", "create": True, "plan": ["ask", "job", "talk"]},
    {"op": "followup", "text": "one"},
    {"op": "steer", "text": "two"},
    {"op": "advance", "ticks": 6, "seconds": 1},
    {"op": "approval", "decision": "allow"},
    {"op": "advance", "ticks": 2, "seconds": 1},
    {"op": "tool", "decision": "finish"},
    {"op": "advance", "ticks": 8, "seconds": 1},
    {"op": "tool", "decision": "fail"},
    {"op": "advance", "ticks": 8, "seconds": 1},
    {"op": "flush"},
    {"op": "disk", "fail": 1},
    {"op": "arm", "point": "stream:mid", "action": CANCEL},
    {"op": "followup", "text": "three"},
    {"op": "inject", "text": "four"},
    {"op": "advance", "ticks": 4, "seconds": 1},
    {"op": "followup", "text": "five"},
    {"op": "cancel", "cause": "parent", "keep_inbox": True},
    {"op": "followup", "text": "six"},
    {"op": "cancel", "cause": "user", "keep_inbox": False, "settle": False},
    {"op": "steer", "text": "seven"},
    {"op": "shutdown"},
    {"op": "bye"},
]  # fmt: skip


def test_our_servers_real_traffic_meets_both_checks(tmp_path: Path) -> None:
    traffic = _traffic(tmp_path, REQUESTS)
    replies = [(op, obj["reply"]) for op, obj in traffic if "reply" in obj]
    entries = [obj["journal"] for _, obj in traffic if "journal" in obj]
    assert [op for op, _ in replies] == [r["op"] for r in REQUESTS]
    assert all(reply["ok"] for _, reply in replies), replies
    kinds = {(e["k"], e.get("type") or e.get("op")) for e in entries}
    # The run reaches most entry kinds, so the checks below are not vacuous.
    for kind in [("opened", None), ("event", None), ("rt", "turn-ended"), ("act", "cancel"),
                 ("act", "approval"), ("act", "tool"), ("act", "flush"), ("fire", None),
                 ("act", "shutdown"), ("rt", "dropped")]:  # fmt: skip
        assert kind in kinds, kind
    for entry in entries:
        assert valid(entry, JOURNAL, JOURNAL), entry
        check_journal(entry)
    for op, reply in replies:
        assert _reply_valid(reply, op), (op, reply)
        check_reply(reply, op)
    for request in REQUESTS:
        assert valid(request, REQUEST, REQUEST), request
        check_request(request)


@pytest.mark.parametrize(
    ("request_", "names"),
    [
        ({"op": "cancel", "cause": "user", "keep_inbox": False, "settle": "no"}, "$.settle"),
        ({"op": "advance", "ticks": 1, "seconds": "1"}, "$.seconds"),
        ({"op": "tool", "decision": "done"}, "$.decision"),
        ({"op": "flush", "now": True}, "now"),
        ({"op": "nope"}, "unknown request"),
    ],
)
def test_a_malformed_request_is_refused_by_both(request_: dict[str, Any], names: str) -> None:
    if request_["op"] != "nope":
        assert not valid(request_, REQUEST, REQUEST)
    with pytest.raises(AdapterError, match=re.escape(names)):
        check_request(request_)


#: Malformed journal entries, each with the text the driver's error must contain.
CRASH = {"kind": "crash", "after_write": False}
ENDED = {"k": "rt", "type": "turn-ended", "turn": 1, "reason": "aborted", "cause": "user"}
BAD_ENTRIES: list[tuple[dict[str, Any], str]] = [
    ({**ENDED, "reason": {"kind": "aborted"}}, "$.reason"),
    ({**ENDED, "turn": "1"}, "$.turn"),
    ({**ENDED, "cause": "esc"}, "$.cause"),
    ({"k": "rt", "type": "dropped", "target": "next-turn", "ids": ["m"]}, "$.cause"),
    ({"k": "rt", "type": "dropped", "target": "next-turn", "ids": "m", "cause": "user"}, "$.ids"),
    ({"k": "act", "op": "cancel", "phase": "end", "hit": 1, "turn": None}, "$.hit"),
    ({"k": "act", "op": "cancel", "phase": "end", "hit": True}, "$.turn"),
    ({"k": "act", "op": "flush", "phase": "end", "ok": True, "eror": "typo"}, "eror"),
    ({"k": "fire", "point": "flush", "action": {"kind": "crash"}, "events": 3}, "after_write"),
    ({"k": "fire", "point": "nowhere", "action": CRASH, "events": 3}, "$.point"),
    ({"k": "event", "event": {"seq": 0, "time": 0, "type": "turn/start"}}, "$.event.data"),
    ({"k": "act", "op": "followup", "phase": "begin"}, "$.text"),
    ({"k": "event", "event": {"seq": 0, "time": 0, "type": "turn/start", "data": []}},
     "expected an object, got list [] @ $.event.data"),
    ({"k": "event", "event": None}, "expected an object, got NoneType None @ $.event"),
    ({"k": "opened", "created": True, "events": ["x"]},
     "expected an object, got str 'x' @ $.events[0]"),
]  # fmt: skip


@pytest.mark.parametrize(("entry", "names"), BAD_ENTRIES)
def test_a_malformed_entry_is_refused_by_both_with_its_field_named(
    entry: dict[str, Any], names: str
) -> None:
    assert not valid(entry, JOURNAL, JOURNAL)
    with pytest.raises(AdapterError) as info:
        check_journal(entry)
    assert names in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("reply", "op", "names"),
    [
        ({"ok": True, "crashed": False, "result": {"id": 7}, "state": None}, "followup", "$.state"),
        ({"ok": False, "crashed": False}, "cancel", "$.error"),
        ({"ok": True, "crashed": "no", "result": None, "state": None}, "advance", "$.crashed"),
    ],
)
def test_a_malformed_reply_is_refused_with_its_field_named(
    reply: dict[str, Any], op: str, names: str
) -> None:
    with pytest.raises(AdapterError) as info:
        check_reply(reply, op)
    assert names in str(info.value)


def test_a_reply_or_a_state_that_is_not_an_object_is_refused_as_such(tmp_path: Path) -> None:
    """Not a ``KeyError`` or an ``AttributeError``'s words: what was expected, and where."""
    traffic = _traffic(tmp_path, REQUESTS[:3])
    reply = next(obj["reply"] for op, obj in traffic if op == "followup" and "reply" in obj)
    value: Any
    for where, bad, names in [
        (None, None, "reply to 'followup': expected an object, got NoneType None"),
        (None, [1], "reply to 'followup': expected an object, got list [1]"),
        ("state", "idle", "expected an object, got str 'idle' @ $.state"),
        ("inbox", "none", "expected an object, got str 'none' @ $.state.inbox"),
    ]:
        if where is None:
            value = bad
        elif where == "state":
            value = {**reply, "state": bad}
        else:
            value = {**reply, "state": {**reply["state"], "inbox": bad}}
        with pytest.raises(AdapterError) as info:
            check_reply(value, "followup")
        assert names in str(info.value)


def test_a_result_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    traffic = _traffic(tmp_path, REQUESTS[:3])
    reply = next(obj["reply"] for op, obj in traffic if op == "followup" and "reply" in obj)
    reply["result"] = {"id": 7}
    assert not _reply_valid(reply, "followup")
    with pytest.raises(AdapterError, match=r"\$\.result.*\$\.id"):
        check_reply(reply, "followup")
