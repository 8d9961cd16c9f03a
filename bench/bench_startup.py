"""What a process of ours executes before it does its work, in instructions, layer by layer.

``python -m bench startup [--old REV]``. Every case in the suite and in ``conform`` that runs
our CLI is a process of its own, and on a short log nearly all of its CPU is start-up; on a
shared host the time of a 150 ms process moves by a tenth between rounds, more than most
changes to it. So each row here is one process run under valgrind's callgrind, which counts
the instructions it executes (``PYTHONHASHSEED=0``: the same count on every run, whatever
the host's load). Each row imports one more layer than the row above it, so the difference
between two rows is that layer's cost: the interpreter and its ``site`` (the venv's ``.pth``
files included), attrs, orjson, msgspec, the log core, the command line, the parser built,
then a ``check`` of a short log; and beside them ``trio`` and the store, the floor of a
cold open. With ``--old REV`` the rows that import this package also run from a fresh clone
of ``REV`` (bench/trees.py), side by side. Skipped when valgrind is not installed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .biglog import make_log
from .trees import REPO, compiled_clone, drop, workspace

#: Stands for the short log's path in an argument list below.
_LOG = "{log}"

#: (row, the arguments after ``python``, whether it imports this package, whether its layer
#: is its count less the row above it); ``{events}`` in a row is the short log's count.
_ROWS: list[tuple[str, list[str], bool, bool]] = [
    ("python, site", ["-c", "pass"], False, False),
    ("+ attrs", ["-c", "import attrs"], False, True),
    ("+ orjson", ["-c", "import attrs, orjson"], False, True),
    ("+ msgspec", ["-c", "import attrs, orjson, msgspec"], False, True),
    ("+ trio_agent.log", ["-c", "import trio_agent.log"], True, True),
    ("+ trio_agent.cli", ["-c", "import trio_agent.cli"], True, True),
    (
        "+ the parser built",
        ["-c", "import trio_agent.cli.parser as p; p.build_parser()"],
        True,
        True,
    ),
    ("`check` of a {events}-event log", ["-m", "trio_agent", "check", _LOG], True, True),
    ("`--version`", ["-m", "trio_agent", "--version"], True, False),
    ("trio", ["-c", "import trio"], False, False),
    ("trio + the store", ["-c", "import trio, trio_agent.store"], True, True),
]


def instructions(argv: list[str], cwd: Path | None = None) -> int:
    """The instructions ``argv`` executes, counted by callgrind (its output discarded); a
    command that fails has no count worth printing, and stops the bench."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    done = subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"bench startup: {argv} exited {done.returncode}: {done.stderr[-300:]}")
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"bench startup: no count from valgrind for {argv}: {done.stderr[-300:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench startup")
    parser.add_argument("--old", help="an older tree to run beside (a commit, tag or branch)")
    args = parser.parse_args(argv if argv is not None else [])
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not installed (it counts the instructions)")
        return
    space = workspace() if args.old else None
    tmp = Path(tempfile.mkdtemp(prefix="trio-agent-bench-"))
    try:
        old = None if space is None else compiled_clone(args.old, space)
        log = tmp / "session.jsonl"
        _, events = make_log(log, 2)
        print(
            "| process | instructions | the layer |" + (f" {old.rev} | new / old |" if old else "")
        )
        print("|---|---|---|" + ("---|---|" if old else ""))
        previous = 0
        for name, args_after, ours, step in _ROWS:
            command = [sys.executable, *(str(log) if a == _LOG else a for a in args_after)]
            count = instructions(command, cwd=REPO)
            layer = f"+{(count - previous) / 1e6:.1f} M" if step else ""
            line = f"| {name.format(events=events)} | {count / 1e6:.1f} M | {layer} |"
            if old is not None:
                if ours:
                    before = instructions(command, cwd=old.path)
                    line += f" {before / 1e6:.1f} M | {count / before:.3f}x |"
                else:
                    line += " | |"
            print(line, flush=True)
            previous = count
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if space is not None:
            drop(space)
