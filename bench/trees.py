"""Fresh clones of this repository at given revisions, for the benches that run two trees
side by side (``suite``, ``conform``, ``coldopen``, ``startup``).

A clone is what CI starts from: committed files only (no ``.venv``, no bytecode, no caches),
in a temporary directory that other users may read (the tests' PostgreSQL server runs as its
own user and must reach the checkout). Each measured command is a child of this process;
its wall time and its CPU (user + sys of it and every process it waited for) come from its
own ``wait4``, as ``time`` reports them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

#: The repository this bench belongs to.
REPO = Path(__file__).resolve().parents[1]
#: Where the benches keep their runs' output (ignored by git).
OUT = REPO / "bench" / "out"


@attrs.frozen
class Tree:
    """A clone of :data:`REPO` at ``rev`` (resolved to ``commit``), in ``path``."""

    rev: str
    commit: str
    path: Path


@attrs.frozen
class Timed:
    """One command's run: wall seconds, CPU seconds, exit code, and its output's file."""

    wall: float
    cpu: float
    exit: int
    log: Path


def resolve(rev: str) -> str:
    """The commit ``rev`` names in :data:`REPO` (a usage error if it names none)."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"bench: {rev!r} names no commit of {REPO}")
    return out.stdout.strip()


def dirty() -> bool:
    """Whether :data:`REPO`'s working tree differs from its HEAD (the bench measures commits)."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=True,
    )
    return bool(out.stdout.strip())


def clone(rev: str, parent: Path) -> Tree:
    """A fresh clone of :data:`REPO` at ``rev`` in a new directory under ``parent``."""
    commit = resolve(rev)
    path = Path(tempfile.mkdtemp(prefix=f"tree-{commit[:10]}-", dir=parent))
    path.chmod(0o755)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "checkout", "--quiet", commit], check=True)
    return Tree(rev, commit, path)


def compiled_clone(rev: str, parent: Path) -> Tree:
    """A clone (:func:`clone`) with its package compiled to bytecode, as ``make bench`` compiles
    this tree's. A child started in it with ``-c`` or ``-m`` imports the clone's package (its
    current directory comes first on ``sys.path``); checked once here."""
    tree = clone(rev, parent)
    compile_all = [sys.executable, "-m", "compileall", "-q", "trio_agent"]
    subprocess.run(compile_all, cwd=tree.path, check=True)
    where = subprocess.run(
        [sys.executable, "-c", "import trio_agent; print(trio_agent.__file__)"],
        cwd=tree.path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if not where.startswith(str(tree.path)):
        raise SystemExit(f"bench: a child in {tree.path} imports {where.strip()}, not the clone")
    return tree


def workspace() -> Path:
    """A directory for the clones that other users may read; remove it with :func:`drop`."""
    path = Path(tempfile.mkdtemp(prefix="trio-agent-bench-trees-"))
    path.chmod(0o755)
    return path


def drop(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def timed(argv: Sequence[str], cwd: Path, log: Path) -> Timed:
    """Run ``argv`` in ``cwd`` with its output (stdout and stderr) written to ``log``."""
    with open(log, "wb") as sink:
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Timed(wall, usage.ru_utime + usage.ru_stime, proc.returncode, log)


def last_match(pattern: str, log: Path) -> str:
    """The last line of ``log`` that ``pattern`` finds, stripped; ``"?"`` if none does."""
    found = re.findall(pattern, log.read_text("utf-8", "replace"), re.M)
    return found[-1].strip() if found else "?"


def minutes(seconds: float) -> str:
    """``m:ss.s``; rounded first, so that 59.96 s reads 1:00.0 and not 0:60.0."""
    tenths = round(seconds * 10)
    return f"{tenths // 600}:{tenths % 600 / 10:04.1f}"
