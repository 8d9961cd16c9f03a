"""The file commands on a long-session log, side by side with bare parsers, in one run.

``python -m bench files`` (``--turns N``, or ``TRIO_AGENT_BENCH_TURNS``; ``make bench-big``
runs the 32,000-turn, 286 MB case). The log (bench/biglog.py) is generated into a temporary
directory and removed afterwards. Each contender runs in its own subprocess; its CPU time
(user + sys) and peak RSS are that child's own ``wait4`` rusage, so the figures do not mix.

Contenders:

* node: read the file in chunks and ``JSON.parse`` every line (the baseline when node is on
  PATH; otherwise "node not found" and orjson is the baseline);
* python: ``orjson.loads`` of every line, streamed;
* ``trio-agent check`` / ``repair`` / ``fold`` / ``truncate`` / ``show`` on the same file
  (``show`` writes its timeline to a file in the temporary directory; the others' output is
  discarded);
* cold open: ``JsonlStore.open`` of a copy of the file (it repairs the open turn, so it gets
  its own copy, synced as a writer leaves its log: :func:`durable_copy`), holding the live
  session; no checkpoint lies beside the copy, so the open
  scans it whole (``python -m bench coldopen`` opens from one); its peak RSS is also given
  as a multiple of the file's size.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

from .biglog import make_log

DEFAULT_TURNS = int(os.environ.get("TRIO_AGENT_BENCH_TURNS", "4000"))

_NODE_PARSE = r"""
const fs = require("fs");
const fd = fs.openSync(process.argv[1], "r");
const buf = Buffer.allocUnsafe(1 << 24);
let carry = Buffer.alloc(0), lines = 0;
for (;;) {
  const n = fs.readSync(fd, buf, 0, buf.length, null);
  if (n === 0) break;
  let chunk = Buffer.concat([carry, buf.subarray(0, n)]);
  const end = chunk.lastIndexOf(10) + 1;
  carry = Buffer.from(chunk.subarray(end));
  const parts = chunk.toString("utf8", 0, end).split("\n");
  for (let i = 0; i < parts.length - 1; i++) { JSON.parse(parts[i]); lines++; }
}
console.log(lines);
"""

_ORJSON_PARSE = """
import sys, orjson
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.endswith(b"\\n"):
            orjson.loads(line)
            n += 1
print(n)
"""

_COLD_OPEN = """
import sys, trio
from trio_agent.store import JsonlStore

async def main():
    async with JsonlStore(sys.argv[1], reap_orphans=None) as store:
        session = await store.open(sys.argv[2])
        print(len(session.events), session.open_turn)

trio.run(main)
"""


@attrs.frozen
class Usage:
    cpu: float  # user + sys seconds
    rss_mb: float  # peak resident set, MB
    exit: int


def durable_copy(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` and ``fsync`` it, as a writer leaves its log (every flush
    is synced): an open's own ``fsync`` then writes back only what the open wrote. A copy
    left dirty in the page cache made the first ``fsync`` of the timed open write back the
    whole file, which no real open pays (the 286 MB log's checkpointed open, measured once:
    16.3 ms of system CPU, against 0.4 ms after a ``sync``)."""
    shutil.copyfile(source, target)
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run_child(argv: list[str], out: Path | None = None, cwd: Path | None = None) -> Usage:
    """Run ``argv`` (in ``cwd``, default this process's) with output discarded, or written to
    the file ``out`` (``show``: the timeline's cost includes writing it, as a user
    redirecting it pays); its own rusage from ``wait4``."""
    with open(out, "wb") if out is not None else open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Usage(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def rss_floor_mb() -> float:
    """This process's peak RSS, MB: Linux records, at exec, the peak of the memory a child
    shared with its parent at the fork, so no child's peak RSS reads below it."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench files")
    parser.add_argument("--turns", type=int, default=DEFAULT_TURNS)
    parser.add_argument("--repeat", type=int, default=1, help="best of N for each contender")
    args = parser.parse_args(argv if argv is not None else [])
    tmp = Path(tempfile.mkdtemp(prefix="trio-agent-bench-"))
    try:
        log = tmp / "session.jsonl"
        size, events = make_log(log, args.turns)
        print(f"log: {size / 1e6:.0f} MB, {events:,} events, {args.turns:,} turns (last open)")
        py = sys.executable
        cli = [py, "-m", "trio_agent"]
        contenders: list[tuple[str, list[str] | None]] = []
        node = shutil.which("node")
        contenders.append(
            ("node JSON.parse per line", [node, "-e", _NODE_PARSE, str(log)] if node else None)
        )
        contenders.append(("orjson.loads per line", [py, "-c", _ORJSON_PARSE, str(log)]))
        for command in ("check", "repair", "fold", "truncate", "show"):
            contenders.append((f"trio-agent {command}", [*cli, command, str(log)]))
        store = tmp / "store"
        session_dir = store / "bench"
        session_dir.mkdir(parents=True)
        copy = session_dir / "session.jsonl"
        cold_open = [py, "-c", _COLD_OPEN, str(store), "bench"]
        contenders.append(("cold open (JsonlStore.open)", cold_open))
        # Round-robin: each round runs every contender once, so a change in the machine's
        # load falls on all of them alike; the table shows each one's best round.
        present = [(name, argv_) for name, argv_ in contenders if argv_ is not None]
        for name, command_argv in contenders:
            if command_argv is None:
                print(f"{name:28} node not found")
        rounds: list[dict[str, Usage]] = []
        for _ in range(args.repeat):
            this: dict[str, Usage] = {}
            for name, command_argv in present:
                if name.startswith("cold open"):
                    durable_copy(log, copy)  # a fresh cold copy for every run
                shown = tmp / "show.txt" if name == "trio-agent show" else None
                this[name] = run_child(command_argv, shown)
            rounds.append(this)
        results = {name: min((r[name] for r in rounds), key=lambda u: u.cpu) for name, _ in present}
        base_name = next(iter(results))
        base = results[base_name]
        for name, usage in results.items():
            ratio = usage.cpu / base.cpu
            status = "" if usage.exit == 0 else f"  EXIT {usage.exit}"
            print(
                f"{name:28} cpu {usage.cpu:7.2f} s  {usage.cpu / events * 1e6:5.2f} us/event  "
                f"{ratio:5.2f}x {base_name.split()[0]}  peak rss {usage.rss_mb:7.1f} MB"
                f" ({usage.rss_mb * 2**20 / size:4.2f}x file){status}"
            )
        print(f"(a child's peak rss reads at least this process's own: {rss_floor_mb():.1f} MB)")
        if args.repeat > 1:
            print(f"single rounds (cpu s, and x {base_name.split()[0]} of the same round):")
            for name, _ in present:
                cells = "  ".join(
                    f"{r[name].cpu:6.2f} {r[name].cpu / r[base_name].cpu:4.2f}x" for r in rounds
                )
                print(f"  {name:28} {cells}")
        check, cold = results.get("trio-agent check"), results.get("cold open (JsonlStore.open)")
        if check is not None and cold is not None:
            print(
                f"cold open / check: {cold.cpu / check.cpu:.2f}x cpu (a full scan: this log has no"
                " checkpoint; python -m bench coldopen measures an open from one)"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
