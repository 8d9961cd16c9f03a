"""``python -m bench``'s own command line (bench/__main__.py): ``--help`` lists the
benchmarks and runs none, and a wrong name or an option a benchmark does not take is one
line and exit 2, before any benchmark runs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.procenv import REPO, child_env


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_lists_every_benchmark_and_runs_none(flag: str) -> None:
    done = bench(flag)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.splitlines()[-1].removeprefix("benchmarks: ").split(", ")
    present = sorted(p.stem.removeprefix("bench_") for p in (REPO / "bench").glob("bench_*.py"))
    assert listed == present
    assert "==" not in done.stdout and done.stderr == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nope"], "bench: no benchmark named 'nope' (have: coldopen, "),
        (["log", "--turns", "3"], "bench: log takes no options (given: --turns 3)"),
    ],
)
def test_a_wrong_name_or_option_is_one_line_exit_2(args: list[str], says: str) -> None:
    done = bench(*args)
    assert done.returncode == 2
    assert done.stdout == ""  # nothing ran
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(says), done.stderr
