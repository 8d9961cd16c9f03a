"""``trio-agent conform``: every vector through the file-command contract of spec/cli.md.

Our own CLI runs through it exactly as a port's would (a subprocess per command); ports with
a planted bug show that each kind of expectation can fail and that the failure names the
case, the expectation and the answer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli
from support.polling import HANG_GUARD

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]
#: A hang guard only: the slowest run here (every vector through our CLI) takes some 20 s.
GUARD = 10 * HANG_GUARD


def conform(*args: str, port: list[str]) -> subprocess.CompletedProcess[str]:
    return cli("conform", *args, "--", *port, cwd=ROOT, guard=GUARD)


def test_our_cli_passes_every_vector() -> None:
    result = conform(port=[PY, "-m", "trio_agent"])
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    total = len(list((ROOT / "spec" / "vectors").rglob("*.json")))
    assert last.startswith(f"{total}/{total} vectors pass"), result.stdout
    table = result.stdout.splitlines()
    for folder in ("valid", "invalid", "unreadable", "repair", "fold", "truncate", "torn"):
        assert any(line.startswith(folder) and line.endswith("pass") for line in table)


#: A port wrapping our CLI with one bug, chosen by the first argument.
BUGGY_PORT = """
import sys
from trio_agent.cli import main
bug, argv = sys.argv[1], sys.argv[2:]
if bug == "ignores-stopped":
    while "--stopped" in argv:
        i = argv.index("--stopped"); del argv[i:i + 2]
if bug == "ignores-boot-id":
    while "--boot-id" in argv:
        i = argv.index("--boot-id"); del argv[i:i + 2]
if bug == "no-suffix":
    argv = [a for a in argv if a != "--suffix"]
if bug == "balanced-always-ok":
    argv = [a for a in argv if a != "--balanced"]
if bug == "closers-not-objects" and argv[:1] == ["repair"]:
    print(1)
    raise SystemExit(0)
if bug == "wrong-rule":
    import io
    err = io.StringIO()
    code = main(argv, sys.stdout, err)
    sys.stderr.write(err.getvalue().replace(": I16: ", ": I15: "))
    raise SystemExit(code)
raise SystemExit(main(argv))
"""


@pytest.mark.parametrize(
    ("bug", "only", "case"),
    [
        ("ignores-stopped", "repair/stopped-*", "repair/stopped-process-group"),
        ("ignores-boot-id", "repair/other-host-*", "repair/other-host-process-group"),
        ("no-suffix", "fold/suffix-*", "fold/suffix-with-step"),
        ("balanced-always-ok", "valid/*open*", "valid/"),
        ("wrong-rule", "invalid/I16-*", "invalid/I16-"),
        ("closers-not-objects", "torn/*", "torn/"),
    ],
)
def test_a_planted_bug_fails_and_names_the_case(
    bug: str, only: str, case: str, tmp_path: Path
) -> None:
    port = tmp_path / "port.py"
    port.write_text(BUGGY_PORT)
    result = conform("--only", only, port=[PY, str(port), bug])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"FAIL {case}" in result.stdout
    assert "expected" in result.stdout and "the port answered" in result.stdout


def test_usage_errors_are_one_line_exit_2() -> None:
    result = conform(port=[])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "conform:" in result.stderr
    result = conform("--only", "no-such-case", port=[PY, "-m", "trio_agent"])
    assert result.returncode == 2 and "no vector matches" in result.stderr
