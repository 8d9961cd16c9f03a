"""The environment a test's child process runs with: ours, with this checkout first on
``PYTHONPATH`` so that ``python -m trio_agent`` or a test script imports the code under test;
the stopping signals it starts with, for the tests that send them; and the standard
descriptors it starts without, for the tests that close them."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from trio_agent.stop_signals import STOPPING_SIGNALS

#: The repository root (the folder holding ``trio_agent/`` and ``tests/``).
REPO = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    """A copy of ``os.environ`` with :data:`REPO` prepended to ``PYTHONPATH``, then ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


#: Sets each stopping signal to be ignored if its number is in ``argv[1]`` (comma-separated),
#: else to its default, closes the descriptors numbered in ``argv[2]``, then becomes
#: ``argv[3:]`` (exec: the same process, the same pid).
_EXEC_AS_STARTED = (
    "import os, signal, sys\n"
    "ignored = {int(n) for n in sys.argv[1].split(',') if n}\n"
    f"for each in {tuple(int(s) for s in STOPPING_SIGNALS)}:\n"
    "    signal.signal(each, signal.SIG_IGN if each in ignored else signal.SIG_DFL)\n"
    "for fd in filter(None, sys.argv[2].split(',')):\n"
    "    os.close(int(fd))\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


def _as_started(argv: Sequence[str], ignored: Iterable[int], closed: Iterable[int]) -> list[str]:
    """``argv`` (its first word an absolute path) run through :data:`_EXEC_AS_STARTED`."""
    numbers = [",".join(str(int(each)) for each in group) for group in (ignored, closed)]
    return [sys.executable, "-c", _EXEC_AS_STARTED, *numbers, *argv]


def with_signals(argv: Sequence[str], *, ignored: Iterable[signal.Signals] = ()) -> list[str]:
    """``argv`` (its first word an absolute path) started with SIGINT, SIGTERM and SIGHUP at
    their defaults, as a terminal's foreground job starts, but ``ignored``, as ``nohup``
    (SIGHUP) or a shell's background job (SIGINT) starts one. A test that sends a command
    these signals starts it so: it would otherwise inherit what this test run was started
    with, and a runner started as a background job ignores SIGINT."""
    return _as_started(argv, ignored, ())


def without_fds(argv: Sequence[str], fds: Iterable[int]) -> list[str]:
    """``argv`` (its first word an absolute path) started without the descriptors ``fds``
    (0, 1, 2: stdin, stdout, stderr), as a shell's ``<&-``, ``>&-`` or ``2>&-`` starts it
    (the stopping signals at their defaults, as :func:`with_signals` starts it)."""
    return _as_started(argv, (), fds)
