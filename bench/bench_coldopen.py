"""A cold open from a checkpoint beside a full scan and ``check``, at several log sizes, in
one run (spec/persistence.md §5.1).

``python -m bench coldopen`` (``--turns 8000 32000``; ``make bench-big`` runs these). For
each size the log (bench/biglog.py, last turn open: a crashed session) is generated into a
temporary directory, and each contender runs in its own subprocess (CPU = user + sys and
peak RSS from that child's ``wait4``), round-robin:

* ``trio-agent check`` of the log (the reference: it reads everything);
* the floor: a process that only starts Python and imports trio, which any open of a trio
  store pays before it reads a byte, and one that imports the store too: both the same for
  every log size;
* cold open, full scan: ``JsonlStore(checkpoint_every=None).open`` of a fresh copy (synced,
  as a writer leaves its log: ``bench_files.durable_copy``);
* cold open, checkpoint: ``JsonlStore(checkpoint_every=--tail).open`` of a fresh copy whose
  sidecar is the checkpoint the writer would have recorded last in the worst case: at the
  last ``turn/end`` at least ``--tail`` bytes (default: the default ``checkpoint_every``)
  before the end, so the open reads about that much plus the open turn, and, a checkpoint
  being due again, records a new one at the end (its cost counts). The sidecar is made
  before the timed run (by the same pure ``take`` the writer calls) and is not part of it.

With ``--old REV`` the checkpointed open and the store's import also run from a fresh clone of
an older tree (bench/trees.py; its bytecode compiled first, as ``make bench-big`` does for
this one), in the same rounds, on the same copy and sidecar: the two trees side by side.

Each open holds the live session (repaired: it appends the closers) and prints its event
count, so the three agree on the log they read, and the CPU of the open's own work (the
process's rusage, every thread): from the call to ``store.open`` until the store's
``async with`` has closed the session. The writer's task records the checkpoint the open
made due (the worst case's new checkpoint, about as costly as the sidecar's decode) in the
background as soon as the call returns, and closing waits for it, then unlocks. The rest of
an open's process is the interpreter's start-up and the imports of trio and the store, which
do not depend on the session.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from trio_agent.log import checkpoint as ck
from trio_agent.log.scan import scan_lines
from trio_agent.store.checkpoints import file_identity, record_checkpoint, sidecar_of
from trio_agent.store.fileops import FileOps
from trio_agent.store.write_policy import CHECKPOINT_EVERY

from .bench_files import Usage, durable_copy, rss_floor_mb, run_child
from .biglog import make_log
from .trees import Tree, compiled_clone, drop, workspace

_OPEN = """
import resource, sys, trio
from trio_agent.store import JsonlStore

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of the process
    return usage.ru_utime + usage.ru_stime

async def main():
    every = None if sys.argv[3] == "off" else int(sys.argv[3])
    async with JsonlStore(sys.argv[1], reap_orphans=None, checkpoint_every=every) as store:
        before = cpu()
        session = await store.open(sys.argv[2])
        seen = len(session.events), session.open_turn
    # closed: the writer has recorded the checkpoint the open made due, and unlocked
    print(cpu() - before, *seen)

trio.run(main)
"""


_IMPORTS = "import trio\nfrom trio_agent.store import JsonlStore\n"


def write_checkpoint(log: Path, tail: int) -> int:
    """Record beside ``log`` the checkpoint of its last balanced prefix ending at least
    ``tail`` bytes before its end; returns that prefix's length. Streamed, two passes."""
    size = log.stat().st_size
    end = 0
    last = b""
    with log.open("rb") as f:
        header = f.readline()
        offset = len(header)
        for line in f:
            if offset + len(line) > size - tail:
                break
            offset += len(line)
            if b'"type":"turn/end"' in line:
                end, last = offset, line
    with log.open("rb") as f:
        scan = scan_lines(_upto(f, end))
    fd = os.open(log, os.O_RDONLY)
    try:
        file_id = file_identity(fd)
    finally:
        os.close(fd)
    cp = ck.take(
        scan.checker,
        session=scan.header.id,
        offset=end,
        header_line=header,
        last_line=last,
        file_id=file_id,
    )
    record_checkpoint(FileOps(), log, ck.encode(cp))
    return end


def _upto(lines: Iterable[bytes], end: int) -> Iterator[bytes]:
    at = 0
    for line in lines:
        if at >= end:
            return
        at += len(line)
        yield line


def _prepare(log: Path, tail: int) -> int:
    """:func:`write_checkpoint` in a child process: a child's peak RSS counts from what its
    parent held when it forked, so the parent never holds a log's worth of anything."""
    code = "import sys; from bench.bench_coldopen import write_checkpoint as w; "
    code += "print(w(__import__('pathlib').Path(sys.argv[1]), int(sys.argv[2])))"
    out = subprocess.run(
        [sys.executable, "-c", code, str(log), str(tail)], check=True, capture_output=True
    )
    return int(out.stdout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench coldopen")
    parser.add_argument("--turns", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--tail", type=int, default=CHECKPOINT_EVERY)
    parser.add_argument("--repeat", type=int, default=1, help="best of N for each contender")
    parser.add_argument("--old", help="an older tree to open beside (a commit, tag or branch)")
    args = parser.parse_args(argv if argv is not None else [])
    space = workspace() if args.old else None
    try:
        old = None if space is None else compiled_clone(args.old, space)
        _measure(args, old)
    finally:
        if space is not None:
            drop(space)


def _measure(args: argparse.Namespace, old: Tree | None) -> None:
    py = sys.executable
    rows: list[tuple[int, int, dict[str, Usage], dict[str, float]]] = []
    for turns in args.turns:
        tmp = Path(tempfile.mkdtemp(prefix="trio-agent-bench-"))
        try:
            log = tmp / "session.jsonl"
            size, events = make_log(log, turns)
            if size < 2 * args.tail:  # the checkpoint needs turns before the last --tail bytes
                raise SystemExit(
                    f"bench coldopen: --turns {turns}: {size:,} bytes, too few for --tail "
                    f"{args.tail}"
                )
            store = tmp / "store"
            (store / "bench").mkdir(parents=True)
            copy = store / "bench" / "session.jsonl"
            opening = [py, "-c", _OPEN, str(store), "bench", str(args.tail)]
            contenders: dict[str, tuple[list[str], Path | None]] = {
                "trio-agent check": ([py, "-m", "trio_agent", "check", str(log)], None),
                "python + import trio": ([py, "-c", "import trio"], None),
                "  + import the store": ([py, "-c", _IMPORTS], None),
                "cold open, full scan": ([py, "-c", _OPEN, str(store), "bench", "off"], None),
                "cold open, checkpoint": (opening, None),
            }
            if old is not None:
                contenders[f"  + import the store [{old.rev}]"] = ([py, "-c", _IMPORTS], old.path)
                contenders[f"cold open, checkpoint [{old.rev}]"] = (opening, old.path)
            best: dict[str, Usage] = {}
            opened: dict[str, float] = {}  # CPU of the open's own work, in the best run
            for _ in range(args.repeat):
                for name, (command, cwd) in contenders.items():
                    if name.startswith("cold open"):
                        for stale in copy.parent.iterdir():
                            stale.unlink()
                        durable_copy(log, copy)  # a fresh cold copy for every run
                        if "checkpoint" in name:
                            resumed = _prepare(copy, args.tail)
                    usage = run_child(command, out=tmp / "out.txt", cwd=cwd)
                    if name not in best or usage.cpu < best[name].cpu:
                        best[name] = usage
                        if name.startswith("cold open"):
                            opened[name] = float((tmp / "out.txt").read_text().split()[0])
            rows.append((size, events, best, opened))
            sidecar = sidecar_of(copy).stat().st_size
            print(
                f"log {size / 1e6:6.0f} MB, {events:,} events; the checkpoint's prefix ends "
                f"{(size - resumed) / 2**20:.1f} MiB before the end; it takes {sidecar:,} bytes"
            )
            check = best["trio-agent check"]
            floor = rss_floor_mb()
            print(f"  (a child's peak rss reads at least this process's own: {floor:.1f} MB)")
            width = max(map(len, best))
            for name, usage in best.items():
                status = "" if usage.exit == 0 else f"  EXIT {usage.exit}"
                print(
                    f"  {name:{width}} cpu {usage.cpu:6.3f} s  {usage.cpu / check.cpu:5.3f}x check"
                    f"  peak rss {usage.rss_mb:7.1f} MB ({usage.rss_mb * 2**20 / size:4.2f}x file)"
                    f"{status}"
                )
                if name in opened:
                    print(
                        f"  {'  of which the open':{width}} cpu {opened[name]:6.3f} s  "
                        f"{opened[name] / check.cpu:5.3f}x check  (the rest: start-up and "
                        "imports, the same for any open)"
                    )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        grow = large[0] / small[0]
        names = [name for name in small[2] if name.startswith("cold open")]
        for name in names:
            cpu = large[2][name].cpu / small[2][name].cpu
            rss = large[2][name].rss_mb / small[2][name].rss_mb
            own = large[3][name] / small[3][name]
            print(
                f"{name}: log x{grow:.1f} -> cpu x{cpu:.2f} (the open x{own:.2f}), peak rss "
                f"x{rss:.2f} (flat: x1.00; target: checkpoint <= 0.1x check and <= 100 MB)"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
