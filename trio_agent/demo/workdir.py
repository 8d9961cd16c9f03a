"""The run's work directory: the stand-in test suite the scenarios' bash tool runs.

``run-tests.sh`` prints one line per test, slowly, so a turn has a long-running tool to
cancel or to orphan; it also appends each line to ``progress.log``, so its work stays visible
after its reader is gone (:func:`progress_lines`).

The suite advances with the story, never against the reader's clock: it runs a test only
while the number of tests done is below the **allowance** the run grants in the file
``allowance`` (:func:`allow_tests`; a step grants a few more tests when the story needs the
suite to go on). At the allowance it waits, one tick of ``pace`` seconds at a time, counting
its waiting ticks in ``waited``, for as long as the reader stays on the step: ten minutes or
a lunch break, the suite is still running when they press Next, and it never finishes by
itself (the allowance never reaches :data:`TESTS`). After ``kill -9`` of the worker it goes on
reading the allowance, so the orphan keeps working as far as the story lets it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = [
    "RUN_TESTS_SH",
    "TESTS",
    "TEST_PACE",
    "allow_tests",
    "allowance",
    "prepare_workdir",
    "progress_lines",
    "run_tests_sh",
    "waited_ticks",
]

TESTS: Final = 200
TEST_PACE: Final = 0.4


def run_tests_sh(pace: float = TEST_PACE) -> str:
    """The stand-in test suite, one test every ``pace`` seconds while the allowance lasts.

    ``read`` and ``echo`` are shell builtins: a tick forks only ``sleep``. ``trap '' PIPE``
    keeps it going when its reader disappears (after kill -9 of the worker), as real work
    would.
    """
    return f"""#!/usr/bin/env bash
# A stand-in for a slow test suite: one line per test, one test every {pace:g}s, as far as
# the demo's story allows (the number in ./allowance); at the allowance it waits, counting
# its waiting ticks in ./waited. It also appends to progress.log, so its work stays visible
# after its reader is gone.
trap '' PIPE
i=0
waited=0
while [ "$i" -lt {TESTS} ]; do
  sleep {pace:g}
  allowed=0
  read -r allowed 2>/dev/null < allowance
  if [ "$i" -ge "${{allowed:-0}}" ]; then
    waited=$((waited + 1))
    echo "$waited" > waited
    continue
  fi
  i=$((i + 1))
  echo "test $i/{TESTS} ok"
  echo "test $i/{TESTS} ok" >> progress.log
done
echo "{TESTS} passed"
"""


#: The suite at the demo's pace.
RUN_TESTS_SH: Final = run_tests_sh()


def prepare_workdir(workdir: Path, *, pace: float = TEST_PACE) -> None:
    """Make ``workdir`` (it must not exist yet) holding an executable ``run-tests.sh`` with
    an allowance of no test yet."""
    workdir.mkdir()
    script = workdir / "run-tests.sh"
    script.write_text(run_tests_sh(pace), encoding="utf-8")
    script.chmod(0o755)
    allow_tests(workdir, 0)


def allow_tests(workdir: Path, count: int) -> None:
    """Let the suite run until ``count`` tests are done (replaced atomically, so the suite
    never reads half a number); capped below :data:`TESTS`, so it never finishes by itself."""
    count = max(0, min(count, TESTS - 1))
    tmp = workdir / "allowance.tmp"
    tmp.write_text(f"{count}\n", encoding="ascii")
    os.replace(tmp, workdir / "allowance")


def allowance(workdir: Path) -> int:
    """The allowance granted so far (0 if none)."""
    try:
        return int((workdir / "allowance").read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        return 0


def waited_ticks(workdir: Path) -> int:
    """How many ticks the suite has spent waiting at its allowance so far."""
    try:
        return int((workdir / "waited").read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        return 0


def progress_lines(workdir: Path) -> list[str]:
    """The lines the test suite has appended to ``progress.log`` so far (none if no file)."""
    try:
        return (workdir / "progress.log").read_text().splitlines()
    except OSError:
        return []
