"""Where the test suite spends its CPU: per test, per file, and in the workers' start-up.

``python -m bench testcpu --run [--workers N] [--top N]`` runs the suite as ``make test``
runs it (pytest-xdist, ``--dist worksteal``, the same number of workers, its temporary files
where ``make test`` puts them) with :mod:`bench.testcpu_plugin` loaded, then prints the CPU
of the run: every worker's start-up and collection, the tests' own CPU and their
subprocesses', the test files that cost most and the costliest tests. The rows are kept in
``bench/out/testcpu-<commit>.json``. It runs pytest only (not the lint, the docs or
check-wheel, which ``make test`` runs beside it). Without ``--run`` it says how to run it
and returns: ``make bench`` runs every benchmark with no options, and this one takes as
long as the suite.

On a suite that keeps both cores busy the wall time of one test says little (it is mostly
its neighbours' work); its CPU is its own, so these are the figures to compare before and
after a change. No test asserts any of them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .trees import OUT, REPO, minutes, resolve


def _tmpdir() -> str:
    """Where ``make test`` puts the suite's temporary files (scripts/test-tmpdir.sh)."""
    script = REPO / "scripts" / "test-tmpdir.sh"
    return subprocess.run(["bash", str(script)], capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench testcpu")
    parser.add_argument("--run", action="store_true", help="run the suite (minutes)")
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 2)
    parser.add_argument("--top", type=int, default=25, help="how many tests to list")
    args = parser.parse_args(argv if argv is not None else [])
    if not args.run:
        print("skipped: python -m bench testcpu --run runs the whole suite (minutes)")
        return
    commit = resolve("HEAD")
    with tempfile.TemporaryDirectory(prefix="bench-testcpu-") as rows_dir:
        env = dict(os.environ, BENCH_TESTCPU_DIR=rows_dir, TMPDIR=_tmpdir())
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-p", "bench.testcpu_plugin", "-n", str(args.workers), "--dist", "worksteal"]
        start = time.monotonic()
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.monotonic() - start
        workers = {p.stem: json.loads(p.read_text()) for p in sorted(Path(rows_dir).iterdir())}
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"pytest -n {args.workers}: exit {done.returncode}, {minutes(wall)} wall; {summary}")
    if not workers:
        print("no rows: the run stopped before any test ran", file=sys.stderr)
        raise SystemExit(1)
    OUT.mkdir(parents=True, exist_ok=True)
    kept = OUT / f"testcpu-{commit[:10]}.json"
    kept.write_text(json.dumps(workers))
    _report(workers, args.top)
    print(f"\nrows: {kept.relative_to(REPO)}")


def _report(workers: dict[str, Any], top: int) -> None:
    rows: list[tuple[str, float, float]] = []
    start_up = 0.0
    for record in workers.values():
        start_up += float(record["collection"])
        rows += [(str(n), float(own), float(kids)) for n, own, kids in record["tests"]]
    own = sum(r[1] for r in rows)
    kids = sum(r[2] for r in rows)
    print("\n| CPU | seconds | share |\n|---|---|---|")
    total = start_up + own + kids
    for what, seconds in (
        (f"start-up and collection ({len(workers)} workers)", start_up),
        (f"{len(rows)} tests, in the workers", own),
        ("their subprocesses (reaped)", kids),
        ("all of the above", total),
    ):
        print(f"| {what} | {seconds:.1f} | {seconds / total:.0%} |")
    files: dict[str, float] = collections.defaultdict(float)
    file_kids: dict[str, float] = collections.defaultdict(float)
    for name, mine, theirs in rows:
        path = name.split("::", 1)[0]
        files[path] += mine + theirs
        file_kids[path] += theirs
    print("\n| test file | CPU s | of it subprocesses |\n|---|---|---|")
    for path in sorted(files, key=lambda p: -files[p])[:15]:
        print(f"| {path} | {files[path]:.1f} | {file_kids[path]:.1f} |")
    print("\n| test | CPU s | of it subprocesses |\n|---|---|---|")
    for name, mine, theirs in sorted(rows, key=lambda r: -(r[1] + r[2]))[:top]:
        print(f"| {name} | {mine + theirs:.1f} | {theirs:.1f} |")
