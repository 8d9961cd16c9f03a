"""``trio-agent conform -- CMD...``: run every conformance vector against a port's CLI.

``CMD`` is any program implementing the file-command contract of spec/cli.md (``check``,
``repair``, ``fold``, ``truncate``; exit codes 0/1/2; stdout shapes; the one-line error and
note formats). For each vector of ``spec/vectors/`` this writes the file the vector describes
(spec/README.md §File format), runs ``CMD <command> ... FILE`` the way spec/cli.md §Running
the vectors says, and compares the answer with ``expect`` key by key. It prints pass/fail per
folder and, for every failing case, its id, what was expected and what the port answered.
Exit 0 when every selected case passes, 1 otherwise, 2 for a usage problem.

Only the contract is used, never our internals: ``trio-agent conform -- trio-agent`` runs our
own CLI exactly as it runs a port.

Manners (spec/cli.md §Running the vectors): a program that cannot run is one line and exit 2
before any case; every command of the port runs in its own process group with its output
captured up to ``--max-output`` bytes and the whole case bounded by ``--timeout`` (a safety
net against a hostile or hung program, never a verdict on speed); a progress line on a
terminal; ``--list``, ``--only`` by id, folder or rule, ``-x``, ``--junit-xml``; a unified
diff for every mismatched ``repair``, ``fold`` and ``truncate`` output.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import fnmatch
import functools
import json
import os
import re
import selectors
import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TextIO

import attrs

from ..files import directory_problem
from ..log.codec import MAX_DEPTH, too_deep
from ..procs.group_kill import kill_group_until_gone, kill_leftovers
from ..spec_files import SpecMissing, spec_root
from .conform_options import COMMAND, CORES, MAX_OUTPUT, TIMEOUT
from .program import UsageError

__all__ = ["CaseResult", "default_vectors", "main", "run_case"]

#: Lines of a unified diff shown per mismatch.
DIFF_LINES: Final = 40


def default_vectors() -> Path:
    """``spec/vectors``, shipped inside the package (:func:`~trio_agent.spec_files.spec_root`)."""
    try:
        return spec_root() / "vectors"
    except SpecMissing as exc:
        raise UsageError(f"{exc}; or use --vectors DIR") from None


@attrs.frozen
class Answer:
    """What the port answered to one command line, or what came instead."""

    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    #: Where the command gave no answer a check may accept, what happened instead, in the
    #: runner's words: it was killed, left work behind, or did not run (``code`` is then -1,
    #: which no check accepts). One that starts with ``exit N`` follows the program's exit.
    verdict: str = ""
    #: False when the command was not started at all: there is no output to show.
    ran: bool = True

    def show(self) -> str:
        """``the port answered exit 1; stdout ...; stderr ...``, or the verdict in its place."""
        if not self.ran:
            return self.verdict
        out = self.stdout.strip().replace("\n", "\\n")
        err = self.stderr.strip().replace("\n", "\\n")
        if not self.verdict:
            head = f"the port answered exit {self.code}"
        elif self.verdict.startswith("exit "):
            head = f"the port answered {self.verdict}"
        else:
            head = self.verdict
        return f"{head}; stdout {_clip(out)!r}; stderr {_clip(err)!r}"


def _why(exc: OSError) -> str:
    """An error from starting a program, in the system's words (``No such file or
    directory``), without Python's ``[Errno 2]`` and repr of the path."""
    return exc.strerror or str(exc)


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


@attrs.frozen
class CaseResult:
    """One vector: its id and, if it failed, one line per expectation the port missed."""

    cid: str
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


class Interrupt:
    """Ctrl-C, handed from the main thread to the cases running in the pool: :meth:`set`
    makes a pipe readable, which every :func:`run_bounded` watching it sees at once; each
    then kills its own command's group (the thread that reaps a leader is the one that
    signals its group, so no group id is signalled after its leader was reaped)."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self.is_set = False

    def fileno(self) -> int:
        return self._read

    def set(self) -> None:
        if not self.is_set:
            self.is_set = True
            os.write(self._write, b"!")  # never read: it stays readable for every watcher

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    limit: int,
    budget: float | None = None,
    interrupt: Interrupt | None = None,
) -> Answer:
    """Run ``argv`` (stdin ``/dev/null``, its own process group) to its end, capturing each of
    stdout and stderr up to ``limit`` bytes (spec/cli.md §Running the vectors).

    A command has answered when it has exited, its group is empty and both pipes are at
    end-of-file. Processes it left running in its group are killed the moment it exits, and
    the answer's verdict names them (:attr:`Answer.verdict`): a command must leave no work
    behind. A program that writes more than ``limit``, or has not answered after ``timeout``
    seconds, is killed with its whole group, the verdict saying why (naming ``budget``, the
    ``--timeout`` it is part of, when given). "Killed" is said once the kernel says the
    group is gone (:func:`~trio_agent.procs.group_kill.kill_group_until_gone`). Once the
    program has exited, a pipe still open or still flooding is held by a process that left
    its group: that is said, and it is not killed. When ``interrupt`` is set, or the call is
    interrupted in its own thread (``KeyboardInterrupt``), the group is killed at once; the
    first's verdict is ``interrupted; killed``, the second propagates. A program that
    cannot be started raises :class:`OSError`."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    # Readable once the leader has exited. Until it is reaped (below) the zombie pins its
    # group id, so the group can be scanned and signalled without hitting a reused id.
    exited = os.pidfd_open(proc.pid)
    deadline = time.monotonic() + timeout
    out: dict[int, bytearray] = {}
    late = flooded = interrupted = False
    left = ""  # the processes found in the group when the leader exited
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(exited, selectors.EVENT_READ)
            if interrupt is not None:
                sel.register(interrupt.fileno(), selectors.EVENT_READ)
            for stream in (proc.stdout, proc.stderr):
                assert stream is not None
                os.set_blocking(stream.fileno(), False)
                sel.register(stream.fileno(), selectors.EVENT_READ)
                out[stream.fileno()] = bytearray()
            # Until the leader has exited and both pipes are at end-of-file (the interrupt's
            # pipe, also watched, never ends).
            awaited = {exited, *out}
            while awaited & sel.get_map().keys() and not (flooded or interrupted):
                wait = deadline - time.monotonic()
                if wait <= 0:
                    late = True
                    break
                for key, _ in sel.select(wait):
                    if interrupt is not None and key.fd == interrupt.fileno():
                        interrupted = True
                        break
                    if key.fd == exited:
                        sel.unregister(exited)
                        _, left = kill_leftovers(proc.pid)  # the zombie leader is not one
                        continue
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fd)
                        continue
                    buf = out[key.fd]
                    buf += chunk
                    if len(buf) > limit:
                        del buf[limit:]
                        flooded = True
                        break
            running = exited in sel.get_map()
        if late or flooded or interrupted:
            kill_group_until_gone(proc.pid)  # still pinned: the leader runs or is unreaped
        proc.wait()
    except BaseException:  # Ctrl-C in this thread (the preflight): leave nothing running
        kill_group_until_gone(proc.pid)
        proc.wait()
        raise
    finally:
        os.close(exited)
    assert proc.stdout is not None and proc.stderr is not None
    stdout = bytes(out[proc.stdout.fileno()]).decode("utf-8", "replace")
    stderr = bytes(out[proc.stderr.fileno()]).decode("utf-8", "replace")
    proc.stdout.close()
    proc.stderr.close()
    code = proc.returncode
    outside = "held by a process that left its process group (not killed)"
    if interrupted:
        why = "interrupted; killed"
    elif flooded:
        why = f"more than {limit} bytes of output (--max-output)" + (
            "; killed" if running else f", exit {code}, but the output is {outside}"
        )
    elif late:
        shown = f"{budget if budget is not None else timeout:g}s (--timeout)"
        if running:
            why = f"no answer within {shown}; killed"
        else:
            why = f"exit {code}, but its output was still open after {shown}: {outside}"
    elif left:
        why = f"exit {code}, but left {left} running in its group; killed"
    else:
        return Answer(tuple(argv), code, stdout, stderr)
    return Answer(tuple(argv), -1, stdout, stderr, verdict=why)


class _Runner:
    """Runs the port's commands on one case file, each distinct command line once, all of
    them within one ``timeout`` (the case's)."""

    def __init__(
        self,
        command: Sequence[str],
        path: Path,
        timeout: float,
        limit: int,
        interrupt: Interrupt | None,
    ) -> None:
        self.command = list(command)
        self.path = str(path)
        self._answers: dict[tuple[str, ...], Answer] = {}
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout
        self._limit = limit
        self._interrupt = interrupt

    def __call__(self, *args: str) -> Answer:
        argv = (*self.command, *args, self.path)
        if argv not in self._answers:
            left = self._deadline - time.monotonic()
            if self._interrupt is not None and self._interrupt.is_set:
                answer = Answer(argv, -1, "", "", verdict="not run: interrupted", ran=False)
            elif left <= 0:
                used_up = f"not run: the case used up its {self._timeout:g}s"
                answer = Answer(argv, -1, "", "", verdict=used_up, ran=False)
            else:
                try:
                    answer = run_bounded(
                        argv,
                        timeout=left,
                        limit=self._limit,
                        budget=self._timeout,
                        interrupt=self._interrupt,
                    )
                except OSError as exc:
                    cannot = f"could not run it: {_why(exc)}"
                    answer = Answer(argv, -1, "", "", verdict=cannot, ran=False)
            self._answers[argv] = answer
        return self._answers[argv]

    def cmd(self, answer: Answer) -> str:
        """The command as a port author would type it (the file as FILE)."""
        args = answer.argv[len(self.command) :]
        return shlex.join(args[:-1]) + " FILE"


def file_bytes(vector: dict[str, Any]) -> bytes:
    """spec/README.md §File format: every ``log`` string and ``\\n``, then ``torn``; or
    exactly the bytes of ``file_hex`` (a file that is not UTF-8)."""
    if "file_hex" in vector:
        return bytes.fromhex(str(vector["file_hex"]))
    lines = b"".join(str(line).encode() + b"\n" for line in vector["log"])
    return lines + str(vector.get("torn", "")).encode()


def _canonical(value: Any) -> str:
    # Strict JSON equality: json.loads keeps 1 and 1.0 and true apart, and dumps them apart.
    return json.dumps(value, sort_keys=True)


#: How deep a port's JSON output may nest: a log line's limit (spec/log.md §Values) and room
#: for the report around an event. Deeper output is not JSON the case reads, before Python's
#: parser, printer or comparison can run out of stack on it.
_OUTPUT_DEPTH: Final = MAX_DEPTH + 8


def _json_lines(text: str) -> list[Any] | None:
    lines = [line for line in text.splitlines() if line.strip()]
    if any(too_deep(line, _OUTPUT_DEPTH) for line in lines):
        return None
    try:
        values = [json.loads(line) for line in lines]
    except (ValueError, RecursionError):
        return None
    return values if _is_text(values) else None


def _is_text(value: Any) -> bool:
    """False when a string in ``value`` holds a lone surrogate: an escape such as
    ``"\\ud800"`` that names no character is not JSON this kit reads (spec/log.md §Torn
    tail), and no text can be printed with it (it once ended conform in an internal error)."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def _pretty(values: Any) -> list[str]:
    return json.dumps(values, sort_keys=True, indent=1, ensure_ascii=False).splitlines()


def json_diff(expected: Any, stdout: str, got: Any | None) -> str:
    """A unified diff from the expected JSON to what the port printed (pretty-printed with
    sorted keys when it is JSON, the raw stdout otherwise), at most :data:`DIFF_LINES` lines."""
    if not stdout.strip():
        return ""  # nothing to compare: the answer line already says stdout ''
    theirs = _pretty(got) if got is not None else stdout.splitlines()
    lines = list(
        difflib.unified_diff(
            _pretty(expected), theirs, "expected", "the port's stdout", lineterm=""
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... {len(lines) - DIFF_LINES} more diff lines"]
    return "\n".join(lines)


def _problem_lines(answer: Answer, path: str) -> list[str]:
    """The stderr lines that are not notes (spec/cli.md §stderr: errors and notes)."""
    return [
        line
        for line in answer.stderr.splitlines()
        if line.strip() and not re.match(re.escape(path) + r"(:\d+)?: note: ", line)
    ]


_VIOLATION = re.compile(r":(\d+): seq (-?\d+|\?): (I\d+): \S")
_OPEN_TURN = re.compile(r":(\d+): turn (\d+) is open")
_TORN_NOTE = re.compile(r":(\d+): note: torn tail ignored \((\d+) bytes\)")


def run_case(
    command: Sequence[str],
    cid: str,
    vector: dict[str, Any],
    tmp: Path,
    *,
    timeout: float = TIMEOUT,
    limit: int = MAX_OUTPUT,
    interrupt: Interrupt | None = None,
) -> CaseResult:
    """Check one vector against the port (spec/cli.md §Running the vectors); once
    ``interrupt`` is set, its commands are killed and the rest are not run."""
    case_dir = tmp / cid.replace("/", "__")
    case_dir.mkdir(parents=True, exist_ok=True)
    path = case_dir / "log.jsonl"
    data = file_bytes(vector)
    path.write_bytes(data)
    run = _Runner(command, path, timeout, limit, interrupt)
    p = str(path)
    expect = vector["expect"]
    problems: list[str] = []

    def fail(answer: Answer, wanted: str, diff: str = "") -> None:
        problems.append(
            f"`{run.cmd(answer)}`: expected {wanted}; {answer.show()}"
            + (f"\n{diff}" if diff else "")
        )

    def first_problem(answer: Answer) -> str:
        lines = _problem_lines(answer, p)
        return lines[0] if lines else ""

    if expect.get("unreadable"):
        a = run("check")
        line = expect.get("line")
        head = first_problem(a)
        prefix = f"{p}:{line}: " if line is not None else f"{p}:"
        if a.code != 2 or not head.startswith(prefix):
            fail(a, f"exit 2 and an error line starting {prefix.replace(p, 'FILE')!r}")

    if expect.get("valid") is True and not vector.get("suffix"):
        a = run("check", "--balanced")
        if expect["balanced"]:
            if a.code != 0:
                fail(a, "exit 0 (valid, every turn ended)")
        else:
            head = first_problem(a)
            m = _OPEN_TURN.match(head[len(p) :]) if head.startswith(p) else None
            if a.code != 1 or m is None:
                fail(a, "exit 1 and the line 'FILE:LINE: turn N is open ...' (valid, open turn)")
            elif int(m.group(1)) != len(vector["log"]) + 1:
                fail(a, f"the open-turn line to name line {len(vector['log']) + 1}")

    if expect.get("valid") is False:
        a = run("check")
        seq = "?" if expect["seq"] is None else str(expect["seq"])
        wanted = f"exit 1 and the line 'FILE:{expect['line']}: seq {seq}: {expect['rule']}: ...'"
        head = first_problem(a)
        m = _VIOLATION.match(head[len(p) :]) if head.startswith(p) else None
        if a.code != 1 or m is None or m.groups() != (str(expect["line"]), seq, expect["rule"]):
            fail(a, wanted)
        # check stops at the first problem, before a torn tail: nothing read was ignored.
        if vector.get("torn") and any(_torn_note(line, p) for line in a.stderr.splitlines()):
            fail(a, f"no torn-tail note (check stops at line {expect['line']}, before the tail)")

    if "torn_tail" in expect:
        a = run("check", "--balanced") if expect.get("valid") is True else run("check")
        torn = expect["torn_tail"].encode()
        lines = a.stderr.splitlines()
        marked = [(i, n) for i, line in enumerate(lines) if (n := _torn_note(line, p))]
        if torn and (not marked or marked[0][1][1] != len(torn)):
            fail(a, f"a note 'FILE:LINE: note: torn tail ignored ({len(torn)} bytes): ...'")
        if not torn and marked:
            fail(a, "no torn-tail note (the file ends in a newline)")
        reported = _problem_lines(a, p)
        if torn and marked and reported and lines.index(reported[0]) < marked[0][0]:
            fail(a, "the torn-tail note before the problem line (the note is about reading)")

    if "closers" in expect:
        args = [x for cid_ in vector.get("stopped", []) for x in ("--stopped", cid_)]
        for cid_, kind in vector.get("reaped", {}).items():
            args += ["--reaped", f"{cid_}={kind}"]
        if "bootId" in vector:
            args += ["--boot-id", vector["bootId"]]
        a = run("repair", *args)
        got = _json_lines(a.stdout)
        want = [_canonical(e) for e in expect["closers"]]
        if a.code != 0 or got is None or [_canonical(e) for e in got] != want:
            fail(
                a,
                f"exit 0 and these closers, one JSON object a line: {_clip(' '.join(want))}",
                json_diff(expect["closers"], a.stdout, got),
            )

    if "fold" in expect:
        a = run("fold", "--suffix") if vector.get("suffix") else run("fold")
        got = _json_lines(a.stdout)
        if (
            a.code != 0
            or got is None
            or [_canonical(g) for g in got] != [_canonical(expect["fold"])]
        ):
            theirs = got[0] if got is not None and len(got) == 1 else got
            fail(
                a,
                f"exit 0 and {_canonical(expect['fold'])}",
                json_diff(expect["fold"], a.stdout, theirs),
            )

    if "truncate" in expect:
        a = run("truncate")
        got = _json_lines_or_doc(a.stdout)
        if a.code != 0 or got is None or _canonical(got) != _canonical(expect["truncate"]):
            fail(
                a,
                f"exit 0 and the report {_clip(_canonical(expect['truncate']))}",
                json_diff(expect["truncate"], a.stdout, got),
            )

    if "store" in expect:
        _check_store(run, p, data, vector, expect["store"], fail, first_problem)

    return CaseResult(cid, tuple(problems))


def _json_lines_or_doc(text: str) -> Any:
    """One JSON document on stdout, pretty-printed or not."""
    if too_deep(text, _OUTPUT_DEPTH):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if _is_text(value) else None


def _torn_note(line: str, path: str) -> tuple[int, int] | None:
    if not line.startswith(path):
        return None
    m = _TORN_NOTE.match(line[len(path) :])
    return (int(m.group(1)), int(m.group(2))) if m else None


def _check_store(
    run: _Runner,
    p: str,
    data: bytes,
    vector: dict[str, Any],
    store: dict[str, Any],
    fail: Any,
    first_problem: Any,
) -> None:
    """spec/recovery.md §Torn tail and corruption, through ``repair`` (spec/cli.md)."""
    a = run("repair")
    damage = store["damage"]
    notes = [n for line in a.stderr.splitlines() if (n := _torn_note(line, p))]
    if damage == "corruption":
        head = first_problem(a)
        if a.code not in (1, 2) or not head.startswith(f"{p}:{store['line']}: "):
            fail(a, f"corruption: exit 1 or 2 and an error line 'FILE:{store['line']}: ...'")
        return
    if a.code != 0:
        fail(a, f"damage {damage!r}: exit 0")
        return
    if damage == "none" and notes:
        fail(a, "damage 'none': no torn-tail note")
    if damage == "torn-tail":
        offset = sum(len(line.encode()) + 1 for line in vector["log"][: store["line"] - 1])
        size = len(data) - offset
        if notes != [(store["line"], size)]:
            fail(a, f"one note 'FILE:{store['line']}: note: torn tail ignored ({size} bytes): ...'")
    closers = _json_lines(a.stdout)
    if closers is None or not all(isinstance(c, dict) for c in closers):
        fail(a, "closers on stdout, one JSON object a line")
        return
    if "closers" in store and [_canonical(c) for c in closers] != [
        _canonical(c) for c in store["closers"]
    ]:
        fail(
            a,
            f"the closers {_clip(' '.join(_canonical(c) for c in store['closers']))}",
            json_diff(store["closers"], a.stdout, closers),
        )
    if closers and closers[0].get("seq") != store["kept_events"]:
        fail(a, f"{store['kept_events']} kept events (the first closer's seq)")


def selected(cid: str, vector: dict[str, Any], pattern: str) -> bool:
    """``--only``: a shell glob over the case id (``repair/*``), its folder (``repair``) or
    the rule it decides (``I16``, ``I1?``)."""
    rule = vector.get("expect", {}).get("rule")
    return any(
        fnmatch.fnmatchcase(name, pattern)
        for name in (cid, cid.split("/")[0], rule if isinstance(rule, str) else "")
        if name
    )


#: Vector folders no command of a port's CLI can be asked about: ``checkpoint/`` holds
#: sidecars a store reads at cold open (spec/persistence.md §5.1), for a port's own tests.
NOT_RUN: Final = frozenset({"checkpoint"})


def load_vectors(root: Path, only: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every vector under ``root`` that one of ``only`` selects (all when empty), but those
    of :data:`NOT_RUN`. A file that is not a vector conform reads is a :class:`UsageError`
    naming it and what is wrong (``--vectors`` may name a porter's own directory)."""
    vectors: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("*.json")):
        cid = str(path.relative_to(root).with_suffix(""))
        if cid.split("/")[0] in NOT_RUN:
            continue
        try:
            vector = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise UsageError(f"{path}: not a vector conform reads: {why}") from None
        problem = vector_problem(vector)
        if problem is not None:
            raise UsageError(f"{path}: not a vector conform reads: {problem}")
        if only and not any(selected(cid, vector, pattern) for pattern in only):
            continue
        vectors[cid] = vector
    return vectors


#: What each key a case reads must be (spec/README.md §Conformance vectors); ``None`` stands
#: for null.
_VECTOR_KEYS: Final[dict[str, tuple[type | None, ...]]] = {
    "log": (list,),
    "torn": (str,),
    "file_hex": (str,),
    "suffix": (bool,),
    "stopped": (list,),
    "reaped": (dict,),
    "bootId": (str,),
    "expect": (dict,),
}
_EXPECT_KEYS: Final[dict[str, tuple[type | None, ...]]] = {
    "unreadable": (bool,),
    "line": (int, None),
    "valid": (bool,),
    "balanced": (bool,),
    "rule": (str,),
    "seq": (int, None),
    "closers": (list,),
    "fold": (dict,),
    "truncate": (dict,),
    "torn_tail": (str,),
    "store": (dict,),
}
_STORE_DAMAGE: Final = ("none", "torn-tail", "corruption")
_JSON_WORDS: Final[dict[type | None, str]] = {
    list: "an array",
    dict: "an object",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    None: "null",
}


def _typed_as(value: Any, kinds: tuple[type | None, ...]) -> bool:
    # type(), not isinstance(): JSON's true is not an integer here
    return any(value is None if kind is None else type(value) is kind for kind in kinds)


def vector_problem(vector: Any) -> str | None:
    """What makes ``vector`` (a parsed vector file) one no case can run, or None: the keys
    a case reads, with the types spec/README.md gives them, and those its assertion needs."""
    if type(vector) is not dict:
        return "not a JSON object"
    if type(vector.get("expect")) is not dict:
        return "expect: missing, or not an object"
    scopes = ((vector, _VECTOR_KEYS, ""), (vector["expect"], _EXPECT_KEYS, "expect."))
    for scope, keys, where in scopes:
        for key, kinds in keys.items():
            if key in scope and not _typed_as(scope[key], kinds):
                return f"{where}{key}: not {' or '.join(_JSON_WORDS[k] for k in kinds)}"
    expect = vector["expect"]
    if "file_hex" not in vector and "log" not in vector:
        return "neither log nor file_hex"
    if not all(type(line) is str for line in vector.get("log", [])):
        return "log: not a list of strings"
    try:
        bytes.fromhex(vector.get("file_hex", ""))
    except ValueError:
        return "file_hex: not hexadecimal"
    if not all(
        type(x) is str for x in [*vector.get("stopped", []), *vector.get("reaped", {}).values()]
    ):
        return "stopped, reaped: not strings"
    needed = {True: ("balanced",), False: ("rule", "seq", "line")}.get(expect.get("valid"), ())
    if missing := [key for key in needed if key not in expect]:
        return f"expect.{missing[0]}: missing"
    if not all(type(c) is dict for c in expect.get("closers", [])):
        return "expect.closers: not a list of objects"
    store = expect.get("store")
    if store is not None:
        if store.get("damage") not in _STORE_DAMAGE:
            return f"expect.store.damage: not one of {', '.join(_STORE_DAMAGE)}"
        if store["damage"] != "none" and type(store.get("line")) is not int:
            return "expect.store.line: not an integer"
        if not all(type(c) is dict for c in store.get("closers", [])):
            return "expect.store.closers: not a list of objects"
    return None


def preflight(command: Sequence[str], tmp: Path, *, timeout: float, limit: int) -> None:
    """Refuse, before any case, a program that cannot run: one that cannot be started, dies
    of a signal, exits 126 or 127 (a shell's "cannot execute" and "not found"), hangs, floods
    its output, leaves work behind (:func:`run_bounded`), or answers ``check`` on a missing
    file with exit 0 and nothing at all (a program that does nothing). spec/cli.md wants
    exit 2 and one line there; any other answer is left to the vectors."""
    missing = tmp / "no-such-file.jsonl"
    shown = shlex.join(command)
    try:
        a = run_bounded([*command, "check", str(missing)], timeout=timeout, limit=limit)
    except OSError as exc:
        raise UsageError(f"cannot run {shown}: {_why(exc)}") from None
    first = (a.stderr.strip().splitlines() or [""])[0]
    if a.verdict:
        why = a.verdict
    elif a.code < 0:
        why = f"killed by signal {-a.code}"
    elif a.code in (126, 127):
        why = f"exit {a.code}: {first or 'cannot execute'}"
    elif a.code == 0 and not a.stdout.strip() and not a.stderr.strip():
        why = "exit 0 and no output at all (spec/cli.md wants exit 2 and one line)"
    else:
        return
    raise UsageError(
        f"{shown} cannot run as a port: `check MISSING-FILE` gave {why}; no vector was run"
    )


def _junit(results: Sequence[CaseResult], command: Sequence[str], path: Path) -> None:
    """JUnit XML: one testsuite per folder, one testcase per vector, a failure per problem."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="trio-agent conform")
    folders: dict[str, list[CaseResult]] = {}
    for r in results:
        folders.setdefault(r.cid.split("/")[0], []).append(r)
    for folder, cases in folders.items():
        suite = ET.SubElement(
            root,
            "testsuite",
            name=folder,
            tests=str(len(cases)),
            failures=str(sum(not r.ok for r in cases)),
        )
        for r in cases:
            case = ET.SubElement(suite, "testcase", classname=folder, name=r.cid)
            if not r.ok:
                failure = ET.SubElement(case, "failure", message=r.problems[0].splitlines()[0])
                failure.text = "\n".join(r.problems)
    ET.SubElement(root, "properties")
    prop = ET.SubElement(root[-1], "property", name="command")
    prop.set("value", shlex.join(command))
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    try:  # in place, not renamed over: FILE may be a device or a pipe a CI reads
        path.write_bytes(data)
    except OSError as exc:  # a full disk, say: the run's report above stands
        raise UsageError(f"{path}: cannot write the JUnit XML: {exc.strerror or exc}") from None


class _Progress:
    """``[done/total] N failed  case`` rewritten in place on a terminal; nothing otherwise."""

    def __init__(self, out: TextIO, total: int) -> None:
        self.out, self.total, self.done, self.failed = out, total, 0, 0
        self.on = out.isatty()

    def step(self, result: CaseResult) -> None:
        self.done += 1
        self.failed += not result.ok
        if self.on:
            failed = f" {self.failed} failed" if self.failed else ""
            line = f"[{self.done}/{self.total}]{failed}  {result.cid}"
            self.out.write("\r\033[K" + line[:100])
            self.out.flush()

    def clear(self) -> None:
        if self.on:
            self.out.write("\r\033[K")
            self.out.flush()


def conform(
    command: Sequence[str],
    vectors: dict[str, dict[str, Any]],
    out: TextIO,
    *,
    jobs: int,
    timeout: float = TIMEOUT,
    limit: int = MAX_OUTPUT,
    exitfirst: bool = False,
    junit: Path | None = None,
    jobs_default: bool = False,
) -> bool:
    """Run ``vectors`` against ``command``; print the per-folder table and failures.
    A program that cannot run raises :class:`UsageError` before any case."""
    import tempfile
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    progress = _Progress(out, len(vectors))
    done: dict[str, CaseResult] = {}
    stopped = False
    with tempfile.TemporaryDirectory(prefix="trio-agent-conform-") as tmp:
        preflight(command, Path(tmp), timeout=timeout, limit=limit)
        jobs = min(jobs, len(vectors))
        default = " (--jobs defaults to the core count)" if jobs_default else ""
        print(f"{len(vectors)} cases, {jobs} at once{default}", file=out, flush=True)
        interrupt = Interrupt()
        with contextlib.closing(interrupt), ThreadPoolExecutor(max_workers=jobs) as pool:
            items = iter(vectors.items())
            running: set[Future[CaseResult]] = set()

            def submit() -> bool:
                item = next(items, None)
                if item is None:
                    return False
                case = functools.partial(
                    run_case, timeout=timeout, limit=limit, interrupt=interrupt
                )
                running.add(pool.submit(case, command, *item, Path(tmp)))
                return True

            # At most ``jobs`` cases in flight, so that -x stops the run promptly.
            for _ in range(jobs):
                submit()
            try:
                while running:
                    finished, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        result = future.result()
                        done[result.cid] = result
                        progress.step(result)
                        stopped = stopped or (exitfirst and not result.ok)
                    while not stopped and len(running) < jobs and submit():
                        pass
            except KeyboardInterrupt:
                # Ctrl-C reaches this thread only: the commands run in sessions of their
                # own, where the terminal's signal does not go. Each case kills its command's
                # group and returns; then the interrupt goes on up (exit 130).
                interrupt.set()
                wait(running)
                raise
            finally:
                progress.clear()
    results = [done[cid] for cid in vectors if cid in done]
    folders: dict[str, list[CaseResult]] = {}
    for result in results:
        folders.setdefault(result.cid.split("/")[0], []).append(result)
    width = max((len(f) for f in folders), default=6)
    for folder, cases in folders.items():
        passed = sum(r.ok for r in cases)
        verdict = "pass" if passed == len(cases) else "FAIL"
        print(f"{folder:<{width}}  {passed:>4}/{len(cases):<4} {verdict}", file=out)
    failed = [r for r in results if not r.ok]
    for result in failed:
        print(f"\nFAIL {result.cid}", file=out)
        for problem in result.problems:
            for n, line in enumerate(problem.splitlines()):
                print(f"  {'' if n == 0 else '  '}{line}", file=out)
    total = len(results)
    print(
        f"\n{total - len(failed)}/{total} vectors pass"
        + (f"; {len(failed)} fail" if failed else "")
        + (
            f"; stopped at the first failure (-x), {len(vectors) - total} not run"
            if stopped
            else ""
        )
        + f" ({shlex.join(command)})",
        file=out,
    )
    if junit is not None:
        _junit(results, command, junit)
    return not failed


def _run(command: list[str], args: argparse.Namespace, out: TextIO) -> int:
    root = Path(args.vectors) if args.vectors else default_vectors()
    if (problem := directory_problem(root)) is not None:
        raise UsageError(f"{root}: {problem} (use --vectors DIR)")
    vectors = load_vectors(root, args.only)
    if not vectors:
        raise UsageError(f"no vector matches {' '.join(args.only)}")
    if args.list:
        for cid, vector in vectors.items():
            rule = vector.get("expect", {}).get("rule")
            print(cid + (f"  {rule}" if isinstance(rule, str) else ""), file=out)
        return 0
    if not command:
        raise UsageError("give the port's command after --, e.g. conform -- ./my-port")
    junit = Path(args.junit_xml) if args.junit_xml else None
    if junit is not None:
        try:
            junit.write_bytes(b"")
        except OSError as exc:
            raise UsageError(f"{junit}: cannot write the JUnit XML: {exc.strerror}") from None
    ok = conform(
        command,
        vectors,
        out,
        jobs=args.jobs,
        jobs_default=args.jobs == CORES,
        timeout=args.timeout,
        limit=args.max_output,
        exitfirst=args.exitfirst,
        junit=junit,
    )
    return 0 if ok else 1


def main(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trio-agent conform [--only GLOB] [--list] [-x] [--jobs N] ... -- CMD...``."""
    return COMMAND.main(args, out, err, _run)
