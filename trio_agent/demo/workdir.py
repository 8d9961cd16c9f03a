"""The run's work directory: the stand-in test suite the scenarios' bash tool runs.

``run-tests.sh`` prints one line per test, slowly, so a turn has a long-running tool to
cancel or to orphan; it also appends each line to ``progress.log``, so its work stays visible
after its reader is gone (:func:`progress_lines`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["RUN_TESTS_SH", "TESTS", "TEST_PACE", "prepare_workdir", "progress_lines"]

TESTS: Final = 200
TEST_PACE: Final = 0.4
#: The long-running tool: a stand-in test suite, one line per test. ``trap '' PIPE`` keeps it
#: going when its reader disappears (after kill -9 of the worker), as real work would.
RUN_TESTS_SH: Final = f"""#!/usr/bin/env bash
# A stand-in for a slow test suite: one line per test, one test every {TEST_PACE}s.
# It also appends to progress.log, so its work stays visible after its reader is gone.
trap '' PIPE
for i in $(seq 1 {TESTS}); do
  sleep {TEST_PACE}
  echo "test $i/{TESTS} ok"
  echo "test $i/{TESTS} ok" >> progress.log
done
echo "{TESTS} passed"
"""


def prepare_workdir(workdir: Path) -> None:
    """Make ``workdir`` (it must not exist yet) holding an executable ``run-tests.sh``."""
    workdir.mkdir()
    script = workdir / "run-tests.sh"
    script.write_text(RUN_TESTS_SH, encoding="utf-8")
    script.chmod(0o755)


def progress_lines(workdir: Path) -> list[str]:
    """The lines the test suite has appended to ``progress.log`` so far (none if no file)."""
    try:
        return (workdir / "progress.log").read_text().splitlines()
    except OSError:
        return []
