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
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TextIO

import attrs

from .spec_files import SpecMissing, spec_root
from .testing.program_command import ProgramCommand, UsageError

__all__ = ["CaseResult", "add_parser", "default_vectors", "main", "run_case"]

#: A safety net against a port that hangs, never a verdict on speed.
TIMEOUT: Final = 300.0


def default_vectors() -> Path:
    """``spec/vectors``, shipped inside the package (:func:`~trio_agent.spec_files.spec_root`)."""
    try:
        return spec_root() / "vectors"
    except SpecMissing as exc:
        raise UsageError(f"{exc}; or use --vectors DIR") from None


@attrs.frozen
class Answer:
    """What the port answered to one command line."""

    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def show(self) -> str:
        out = self.stdout.strip().replace("\n", "\\n")
        err = self.stderr.strip().replace("\n", "\\n")
        return f"exit {self.code}; stdout {_clip(out)!r}; stderr {_clip(err)!r}"


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


class _Runner:
    """Runs the port's commands on one case file, each distinct command line once."""

    def __init__(self, command: Sequence[str], path: Path) -> None:
        self.command = list(command)
        self.path = str(path)
        self._answers: dict[tuple[str, ...], Answer] = {}

    def __call__(self, *args: str) -> Answer:
        argv = (*self.command, *args, self.path)
        if argv not in self._answers:
            import subprocess

            try:
                proc = subprocess.run(
                    argv, capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL
                )
            except subprocess.TimeoutExpired:
                self._answers[argv] = Answer(argv, -1, "", f"no answer within {TIMEOUT:.0f}s")
            except OSError as exc:
                self._answers[argv] = Answer(argv, -1, "", f"cannot run: {exc}")
            else:
                self._answers[argv] = Answer(
                    argv,
                    proc.returncode,
                    proc.stdout.decode("utf-8", "replace"),
                    proc.stderr.decode("utf-8", "replace"),
                )
        return self._answers[argv]

    def cmd(self, answer: Answer) -> str:
        """The command as a port author would type it (the file as FILE)."""
        args = answer.argv[len(self.command) :]
        return " ".join(shlex.quote(a) for a in args[:-1]) + " FILE"


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


def _json_lines(text: str) -> list[Any] | None:
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return None


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


def run_case(command: Sequence[str], cid: str, vector: dict[str, Any], tmp: Path) -> CaseResult:
    """Check one vector against the port (spec/cli.md §Running the vectors)."""
    case_dir = tmp / cid.replace("/", "__")
    case_dir.mkdir(parents=True, exist_ok=True)
    path = case_dir / "log.jsonl"
    data = file_bytes(vector)
    path.write_bytes(data)
    run = _Runner(command, path)
    p = str(path)
    expect = vector["expect"]
    problems: list[str] = []

    def fail(answer: Answer, wanted: str) -> None:
        problems.append(
            f"`{run.cmd(answer)}`: expected {wanted}; the port answered {answer.show()}"
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

    if "torn_tail" in expect:
        a = run("check", "--balanced") if expect.get("valid") is True else run("check")
        torn = expect["torn_tail"].encode()
        notes = [n for line in a.stderr.splitlines() if (n := _torn_note(line, p))]
        if torn and (not notes or notes[0][1] != len(torn)):
            fail(a, f"a note 'FILE:LINE: note: torn tail ignored ({len(torn)} bytes): ...'")
        if not torn and notes:
            fail(a, "no torn-tail note (the file ends in a newline)")

    if "closers" in expect:
        args = [x for cid_ in vector.get("stopped", []) for x in ("--stopped", cid_)]
        if "bootId" in vector:
            args += ["--boot-id", vector["bootId"]]
        a = run("repair", *args)
        got = _json_lines(a.stdout)
        want = [_canonical(e) for e in expect["closers"]]
        if a.code != 0 or got is None or [_canonical(e) for e in got] != want:
            fail(a, f"exit 0 and these closers, one JSON object a line: {_clip(' '.join(want))}")

    if "fold" in expect:
        a = run("fold", "--suffix") if vector.get("suffix") else run("fold")
        got = _json_lines(a.stdout)
        if (
            a.code != 0
            or got is None
            or [_canonical(g) for g in got] != [_canonical(expect["fold"])]
        ):
            fail(a, f"exit 0 and {_canonical(expect['fold'])}")

    if "truncate" in expect:
        a = run("truncate")
        got = _json_lines_or_doc(a.stdout)
        if a.code != 0 or got is None or _canonical(got) != _canonical(expect["truncate"]):
            fail(a, f"exit 0 and the report {_clip(_canonical(expect['truncate']))}")

    if "store" in expect:
        _check_store(run, p, data, vector, expect["store"], fail, first_problem)

    return CaseResult(cid, tuple(problems))


def _json_lines_or_doc(text: str) -> Any:
    """One JSON document on stdout, pretty-printed or not."""
    try:
        return json.loads(text)
    except ValueError:
        return None


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
        fail(a, f"the closers {_clip(' '.join(_canonical(c) for c in store['closers']))}")
    if closers and closers[0].get("seq") != store["kept_events"]:
        fail(a, f"{store['kept_events']} kept events (the first closer's seq)")


def load_vectors(root: Path, only: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every vector under ``root`` whose id matches one of ``only`` (all when empty)."""
    vectors: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("*.json")):
        cid = str(path.relative_to(root).with_suffix(""))
        if only and not any(fnmatch.fnmatchcase(cid, pattern) for pattern in only):
            continue
        vectors[cid] = json.loads(path.read_text("utf-8"))
    return vectors


def conform(
    command: Sequence[str],
    vectors: dict[str, dict[str, Any]],
    out: TextIO,
    *,
    jobs: int,
) -> bool:
    """Run ``vectors`` against ``command``; print the per-folder table and failures."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    with (
        tempfile.TemporaryDirectory(prefix="trio-agent-conform-") as tmp,
        ThreadPoolExecutor(max_workers=jobs) as pool,
    ):
        results = list(
            pool.map(lambda item: run_case(command, item[0], item[1], Path(tmp)), vectors.items())
        )
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
            print(f"  {problem}", file=out)
    total = len(results)
    print(
        f"\n{total - len(failed)}/{total} vectors pass"
        + (f"; {len(failed)} fail" if failed else "")
        + f" ({' '.join(shlex.quote(c) for c in command)})",
        file=out,
    )
    return not failed


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", action="append", default=[], metavar="GLOB", help="case ids to run")
    p.add_argument("--vectors", default=None, metavar="DIR", help="default: spec/vectors")
    p.add_argument(
        "--jobs",
        type=int,
        default=min(4, os.cpu_count() or 1),
        metavar="N",
        help="run N vectors at once",
    )


def _run(command: list[str], args: argparse.Namespace, out: TextIO) -> int:
    root = Path(args.vectors) if args.vectors else default_vectors()
    if not root.is_dir():
        raise UsageError(f"{root}: no vectors directory (use --vectors DIR)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    vectors = load_vectors(root, args.only)
    if not vectors:
        raise UsageError(f"no vector matches {' '.join(args.only)}")
    return 0 if conform(command, vectors, out, jobs=args.jobs) else 1


COMMAND: Final = ProgramCommand(
    name="conform",
    program="the port's",
    help="run every spec vector against a CLI implementing spec/cli.md",
    description="Run spec/vectors against CMD (spec/cli.md). Exit 0 when all pass.",
    options=_options,
    body=_run,
)


def add_parser(sub: Any) -> None:
    """Register ``conform`` on the CLI's subparsers (called from cli.py)."""
    COMMAND.add_parser(sub)


def main(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trio-agent conform [--only GLOB] [--vectors DIR] [--jobs N] -- CMD...``."""
    return COMMAND.main(args, out, err)
