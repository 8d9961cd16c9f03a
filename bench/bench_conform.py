"""``trio-agent conform`` against our own CLI: its cost beside what its commands' start-up
alone costs, and, with ``--old REV``, beside an older tree's, in one run.

``python -m bench conform [--old REV] [--new REV]``. Each tree is a fresh clone (bench/trees.py)
with the runtime dependencies installed (``make .venv/.installed-run``) and its package
compiled to bytecode, as an installed wheel has it. In each, ``trio-agent conform -- python -m
trio_agent`` runs that tree's vectors against that tree's CLI with conform's default
``--jobs`` (the core count). The port is wrapped in ``sh -c`` that counts the commands
conform starts. Beside it, the floor: as many starts of ``python -m trio_agent check`` of a
one-line log (the cheapest command that reads a file), priced from 30 starts.

Without ``--old`` it measures ``--new`` (default ``HEAD``) alone.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path

import attrs

from .bench_files import run_child
from .trees import OUT, Tree, clone, dirty, drop, last_match, timed, workspace

#: conform's last line, e.g. ``303/303 vectors pass (...)``.
VERDICT = r"^(\d+/\d+ vectors pass[^(]*)"
HEADER = '{"type":"session","version":1,"id":"s","createdAt":1}\n'
FLOOR_STARTS = 30


def _prepare(tree: Tree) -> Path:
    """Install ``tree``'s runtime dependencies and compile its package; its python."""
    subprocess.run(
        ["make", "--no-print-directory", ".venv/.installed-run"],
        cwd=tree.path,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    python = tree.path / ".venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "compileall", "-q", "trio_agent"], cwd=tree.path, check=True)
    return python


def _start_cpu(python: Path, tree: Tree) -> float:
    """Median CPU of one ``python -m trio_agent check`` of a one-line log, run in the tree:
    ``-m`` puts the working directory first on ``sys.path``, so from anywhere else it would
    start that directory's package, not the tree's."""
    log = tree.path / "one-line.jsonl"
    log.write_text(HEADER)
    cpus = []
    for n in range(FLOOR_STARTS):
        usage = run_child([str(python), "-m", "trio_agent", "check", str(log)], cwd=tree.path)
        if usage.exit != 0:
            raise SystemExit(f"bench: check of a one-line log exited {usage.exit} (start {n + 1})")
        cpus.append(usage.cpu)
    return statistics.median(cpus)


@attrs.frozen
class Conformed:
    """One tree's conform run and its floor."""

    rev: str
    commit: str
    wall: float
    cpu: float
    commands: int
    start_cpu: float  # one ``check`` start, median
    verdict: str


def _measure(side: str, rev: str, space: Path) -> Conformed:
    tree = clone(rev, space)
    try:
        python = _prepare(tree)
        counter = tree.path / "commands.count"
        counter.write_text("")
        port = [
            "sh",
            "-c",
            'echo >> "$0"; exec "$@"',
            str(counter),
            str(python),
            "-m",
            "trio_agent",
        ]
        log = OUT / f"conform-{side}-{tree.commit[:10]}.log"
        run = timed([str(python), "-m", "trio_agent", "conform", "--", *port], tree.path, log)
        commands = len(counter.read_text().splitlines())
        verdict = last_match(VERDICT, log) if run.exit == 0 else f"exit {run.exit} ({log})"
        start = _start_cpu(python, tree)
        return Conformed(rev, tree.commit[:10], run.wall, run.cpu, commands, start, verdict)
    finally:
        drop(tree.path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench conform")
    parser.add_argument("--old", help="an older tree to run beside (a commit, tag or branch)")
    parser.add_argument("--new", default="HEAD")
    args = parser.parse_args(argv if argv is not None else [])
    if dirty():
        print("note: the working tree has changes; this bench measures commits, not them")
    OUT.mkdir(parents=True, exist_ok=True)
    sides = [("old", args.old), ("new", args.new)] if args.old else [("new", args.new)]
    space = workspace()
    try:
        rows = [_measure(side, rev, space) for side, rev in sides]
    finally:
        drop(space)
    print(
        "| tree | conform wall | conform CPU | commands | CPU per command | floor: one start ",
        end="",
    )
    print("| verdict |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        per = r.cpu / r.commands if r.commands else float("nan")
        print(
            f"| {r.rev} ({r.commit}) | {r.wall:.1f} s | {r.cpu:.1f} s | {r.commands} "
            f"| {per * 1000:.0f} ms | {r.start_cpu * 1000:.0f} ms "
            f"({r.commands * r.start_cpu:.1f} s for all) | {r.verdict} |"
        )
    if len(rows) == 2:
        old, new = rows
        print(f"\nnew / old: wall {new.wall / old.wall:.2f}x, CPU {new.cpu / old.cpu:.2f}x")
