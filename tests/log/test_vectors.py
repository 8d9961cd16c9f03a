"""The conformance vectors of spec/vectors/, run through the pure log core.

One test per vector (``test_vector[<folder>/<name>]``) asserts every key of its ``expect``
(spec/README.md, "Conformance vectors"). The other tests check properties every vector must
have (repair completes a valid prefix and refuses an invalid one), that the JSON Schemas of
spec/schema/ agree with the vectors, and that the schemas and the attrs classes of
``trio_agent.log.events`` list the same fields.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from support.schemas import valid

from trio_agent.log import (
    DATA_CLASSES,
    Event,
    Header,
    HeaderError,
    LogChecker,
    LogError,
    LogViolation,
    UnreadableLineError,
    check_events,
    checkpoint as ck,
    decode_event,
    decode_header,
    event_to_json,
    events as events_module,
    fold_consumed_work,
    repair_closers,
    split_log,
    truncate_open_turn,
)
from trio_agent.log.scan import scan_log

SPEC = Path(__file__).resolve().parents[2] / "spec"
VECTOR_DIR = SPEC / "vectors"
VECTORS: dict[str, dict[str, Any]] = {
    str(path.relative_to(VECTOR_DIR).with_suffix("")): json.loads(path.read_text("utf-8"))
    for path in sorted(VECTOR_DIR.rglob("*.json"))
}
HEADER_SCHEMA = json.loads((SPEC / "schema" / "header.schema.json").read_text("utf-8"))
EVENT_SCHEMA = json.loads((SPEC / "schema" / "event.schema.json").read_text("utf-8"))


def ids(predicate: typing.Callable[[dict[str, Any]], bool] = lambda v: True) -> list[str]:
    return [cid for cid, vector in VECTORS.items() if predicate(vector)]


# -- reading a vector's file the way spec/README.md describes -------------------------------


def file_bytes(vector: dict[str, Any]) -> bytes:
    if "file_hex" in vector:  # bytes that are not UTF-8 cannot be written as JSON strings
        return bytes.fromhex(vector["file_hex"])
    lines = b"".join(line.encode() + b"\n" for line in vector["log"])
    torn: str = vector.get("torn", "")
    return lines + torn.encode()


@attrs.define
class Reading:
    torn_tail: bytes = b""
    events: list[Event] = attrs.Factory(list)
    checker: LogChecker | None = None
    unreadable: int | None = None  # the offending line
    violation: LogViolation | None = None
    offender: Event | None = None  # the decoded event the checker rejected


def read(vector: dict[str, Any]) -> Reading:
    """Header, then each complete line decoded and checked, stopping at the first problem.
    A ``suffix`` vector (a slice of a log) is decoded but not checked."""
    split = split_log(file_bytes(vector))
    reading = Reading(torn_tail=split.torn_tail)
    if not vector.get("suffix"):
        reading.checker = LogChecker()
    if split.header is None:
        reading.unreadable = 1
        return reading
    try:
        decode_header(split.header)
    except HeaderError:
        reading.unreadable = 1
        return reading
    for line_no, line in split.lines:
        try:
            event = decode_event(line, line_no)
        except UnreadableLineError as exc:
            reading.unreadable = exc.line
            return reading
        except LogViolation as exc:
            reading.violation = exc
            return reading
        if reading.checker is not None:
            try:
                reading.checker.feed(event)
            except LogViolation as exc:
                exc.line = line_no
                reading.violation, reading.offender = exc, event
                return reading
        reading.events.append(event)
    return reading


def canonical(events: list[Any]) -> list[str]:
    """JSON values compared strictly (true is not 1), independent of key order."""
    return [json.dumps(e, sort_keys=True) for e in events]


def closers_json(events: list[Event]) -> list[str]:
    return canonical([event_to_json(e) for e in events])


# -- one test per vector -------------------------------------------------------------------


@pytest.mark.parametrize("cid", ids())
def test_vector(cid: str) -> None:
    vector = VECTORS[cid]
    expect = vector["expect"]
    if "store" in expect:  # first: it applies whatever the strict reading says
        check_store(vector, expect["store"])
    if cid.startswith("checkpoint/"):
        check_checkpoint(vector, expect)
    reading = read(vector)
    if expect.get("unreadable"):
        assert reading.unreadable == expect["line"]
        with pytest.raises(HeaderError if expect["line"] == 1 else UnreadableLineError) as info:
            scan_log(file_bytes(vector))
        assert getattr(info.value, "line", 1) == expect["line"]
        return
    assert reading.unreadable is None, f"unreadable at line {reading.unreadable}"

    if "valid" in expect:
        assert reading.checker is not None
        if expect["valid"]:
            assert reading.violation is None, str(reading.violation)
            assert reading.checker.balanced is expect["balanced"]
            scan = scan_log(file_bytes(vector))  # the file reader agrees with the steps above
            assert scan.events == reading.events
        else:
            got = reading.violation
            assert got is not None, "the log was accepted"
            assert (got.rule, got.seq, got.line) == (expect["rule"], expect["seq"], expect["line"])
            with pytest.raises(LogViolation) as info:
                scan_log(file_bytes(vector))
            assert (info.value.rule, info.value.seq, info.value.line) == (
                got.rule,
                got.seq,
                got.line,
            )

    if "torn_tail" in expect:
        assert reading.torn_tail == expect["torn_tail"].encode()

    if "closers" in expect:
        reaped = {cid: "stopped" for cid in vector.get("stopped", [])}
        reaped.update(vector.get("reaped", {}))
        got_closers = repair_closers(reading.events, reaped, vector.get("bootId"))
        assert closers_json(got_closers) == canonical(expect["closers"])

    if "fold" in expect:
        folded = fold_consumed_work(reading.events)
        assert {"end_seq": folded.end_seq, "dropped_unrun": folded.dropped_unrun} == expect["fold"]

    if "truncate" in expect:
        report = truncate_open_turn(reading.events).to_json()
        assert report == expect["truncate"]


def check_store(vector: dict[str, Any], expect: dict[str, Any]) -> None:
    """spec/recovery.md §Torn tail and corruption, through the core's tail-tolerant reader."""
    data = file_bytes(vector)
    if expect["damage"] == "corruption":
        with pytest.raises(LogError) as info:
            scan_log(data, strict=False)
        assert getattr(info.value, "line", None) == expect["line"]
        return
    scan = scan_log(data, strict=False)
    if expect["damage"] == "none":
        assert scan.tail is None
    else:
        assert scan.tail is not None
        assert scan.tail.line == expect["line"]
        offset = sum(len(line.encode()) + 1 for line in vector["log"][: expect["line"] - 1])
        assert (scan.tail.offset, scan.tail.offset + scan.tail.size) == (offset, len(data))
    assert len(scan.events) == expect["kept_events"]
    if "closers" in expect:
        closers = repair_closers(scan.checker)
        assert closers_json(closers) == canonical(expect["closers"])


def _line_ending_at(data: bytes, offset: int) -> bytes:
    if offset > len(data) or not data[:offset].endswith(b"\n"):
        return b""
    return data[data.rfind(b"\n", 0, offset - 1) + 1 : offset]


def check_checkpoint(vector: dict[str, Any], expect: dict[str, Any]) -> None:
    """spec/persistence.md §5.1: the sidecar a writer records for a log (``sidecar``), and
    whether a cold open uses a given one (``used``, with the closers of the tail replayed
    from it) or refuses it, and why (``refused``)."""
    data = file_bytes(vector)
    header_line = data[: data.index(b"\n") + 1]
    events = read(vector).events
    if "sidecar" in expect:
        checker = LogChecker()
        checker.feed_all(events)
        taken = ck.take(
            checker,
            session=decode_header(header_line[:-1]).id,
            offset=len(data),
            header_line=header_line,
            last_line=_line_ending_at(data, len(data)),
            file_id=vector["fileId"],
        )
        assert ck.encode(taken) == expect["sidecar"].encode() + b"\n"
        return
    if vector["sidecar"] is None:
        assert expect["refused"] == ck.MISSING
        return
    try:
        cp = ck.decode(vector["sidecar"].encode() + b"\n")
        ck.verify(
            cp,
            size=len(data),
            header_line=header_line,
            last_line=_line_ending_at(data, cp.offset),
            file_id=vector["fileId"],
        )
    except ck.CheckpointRefused as refused:
        assert refused.reason == expect["refused"], refused.detail
        return
    assert expect.get("used") is True, "the checkpoint was used"
    resumed = ck.restore(cp)
    resumed.feed_all(events[cp.seq :])
    assert closers_json(repair_closers(resumed)) == canonical(expect["closers"])


# -- properties every vector must have -------------------------------------------------------


def _valid_prefix(vector: dict[str, Any]) -> bool:
    return vector["expect"].get("valid") is True and not vector.get("suffix")


@pytest.mark.parametrize("cid", ids(_valid_prefix))
def test_repair_completes_every_valid_log(cid: str) -> None:
    events = read(VECTORS[cid]).events
    closers = repair_closers(events)
    assert check_events([*events, *closers]).balanced
    assert repair_closers([*events, *closers]) == []


def _checker_violation(vector: dict[str, Any]) -> bool:
    # I0 lines do not decode to events, so there is nothing to hand to repair.
    return vector["expect"].get("valid") is False and vector["expect"]["rule"] != "I0"


@pytest.mark.parametrize("cid", ids(_checker_violation))
def test_repair_refuses_every_invalid_log(cid: str) -> None:
    reading = read(VECTORS[cid])
    assert reading.offender is not None
    with pytest.raises(LogViolation) as info:
        repair_closers([*reading.events, reading.offender])
    assert info.value.rule == VECTORS[cid]["expect"]["rule"]


# -- JSON Schema (spec/schema/), checked by jsonschema (tests/support/schemas.py) ----------


def event_valid(value: Any) -> bool:
    return valid(value, EVENT_SCHEMA)


def header_valid(value: Any) -> bool:
    return valid(value, HEADER_SCHEMA)


@pytest.mark.parametrize("cid", ids(lambda v: v["expect"].get("valid") is True))
def test_schema_accepts_valid_vectors(cid: str) -> None:
    vector = VECTORS[cid]
    header, *lines = vector["log"]
    assert header_valid(json.loads(header))
    for line in lines:
        assert event_valid(json.loads(line)), line
    for closer in vector["expect"].get("closers", []):
        assert event_valid(closer), closer


#: I0 cases a JSON Schema validator cannot see, and why.
SCHEMA_BLIND = {
    "invalid/I0-seq-with-fraction": "JSON Schema's integer accepts 1.0 (spec/log.md §Values)",
}


@pytest.mark.parametrize("cid", ids(lambda v: v["expect"].get("rule") == "I0"))
def test_schema_rejects_i0_vectors(cid: str) -> None:
    vector = VECTORS[cid]
    offending = json.loads(vector["log"][vector["expect"]["line"] - 1])
    assert event_valid(offending) is (cid in SCHEMA_BLIND)


def _bad_json_header(vector: dict[str, Any]) -> bool:
    if vector["expect"].get("line") != 1 or not vector["log"]:
        return False
    try:
        json.loads(vector["log"][0])
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("cid", ids(_bad_json_header))
def test_header_schema_rejects_bad_headers(cid: str) -> None:
    assert not header_valid(json.loads(VECTORS[cid]["log"][0]))


# -- the schema and the attrs classes list the same fields ------------------------------------


def _attrs_classes(cls: type[Any], found: dict[str, type[Any]]) -> dict[str, type[Any]]:
    """``cls`` and every attrs class its fields mention, by class name."""
    found[cls.__name__] = cls
    attrs.resolve_types(cls, globalns=vars(events_module))
    stack = [a.type for a in attrs.fields(cls)]
    while stack:
        tp = stack.pop()
        if attrs.has(tp) and tp.__name__ not in found:
            _attrs_classes(tp, found)
        stack.extend(typing.get_args(tp))
    return found


def _fields(cls: type[Any]) -> tuple[set[str], set[str]]:
    """(all wire names, required wire names) of an attrs class, as the codec reads them."""
    names = {events_module.wire_name(a.name) for a in attrs.fields(cls)}
    required = {events_module.wire_name(a.name) for a in attrs.fields(cls) if a.default is not None}
    return names, required


def test_schema_and_attrs_classes_list_the_same_fields() -> None:
    defs = EVENT_SCHEMA["$defs"]
    classes: dict[str, type[Any]] = {}
    for cls in DATA_CLASSES.values():
        _attrs_classes(cls, classes)
    for name, cls in classes.items():
        assert name in defs, f"no $defs/{name} in event.schema.json"
        names, required = _fields(cls)
        assert set(defs[name]["properties"]) == names, name
        assert set(defs[name].get("required", [])) == required, name

    branches = {
        b["properties"]["type"]["const"]: b["properties"]["data"]["$ref"].removeprefix("#/$defs/")
        for b in EVENT_SCHEMA["oneOf"]
    }
    assert branches == {t: cls.__name__ for t, cls in DATA_CLASSES.items()}
    assert EVENT_SCHEMA["properties"]["type"]["enum"] == list(DATA_CLASSES)

    header_names = {"type"} | {events_module.wire_name(a.name) for a in attrs.fields(Header)}
    assert set(HEADER_SCHEMA["properties"]) == header_names
    assert set(HEADER_SCHEMA["required"]) == header_names


def _of_rule(rule: str) -> Callable[[dict[str, Any]], bool]:
    def of_rule(vector: dict[str, Any]) -> bool:
        return bool(vector["expect"].get("rule") == rule)

    return of_rule


def test_every_folder_has_vectors() -> None:
    folders = {cid.split("/")[0] for cid in VECTORS}
    assert folders == {
        "valid",
        "invalid",
        "unreadable",
        "repair",
        "fold",
        "truncate",
        "torn",
        "checkpoint",
    }
    rules = {VECTORS[cid]["expect"]["rule"] for cid in ids(lambda v: "rule" in v["expect"])}
    per_rule = {r: len(ids(_of_rule(r))) for r in rules}
    assert all(per_rule.get(f"I{k}", 0) >= 2 for k in range(20)), per_rule
