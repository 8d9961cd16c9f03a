"""Running the ``trio-agent`` command line as a subprocess, the way a user meets it, and the
checks every test of its errors makes: never a traceback, a failure is one line on stderr.

The hang guard only ends a run that hung (as :class:`subprocess.TimeoutExpired`); the verdict
is always what the test asserts on the finished process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from support import proc
from support.polling import HANG_GUARD, until_sync
from support.procenv import child_env, with_signals

#: ``trio-agent`` as a command line: this interpreter running the package.
CLI = (sys.executable, "-m", "trio_agent")

#: Root ignores directory permissions through CAP_DAC_OVERRIDE; under root a command run with
#: this ``prefix`` has neither it nor CAP_DAC_READ_SEARCH, so the permission bits decide as
#: for a user.
WITHOUT_DAC: tuple[str, ...] = (
    (
        "setpriv",
        "--inh-caps=-dac_override,-dac_read_search",
        "--bounding-set=-dac_override,-dac_read_search",
    )
    if os.geteuid() == 0
    else ()
)
#: Why a test that needs :data:`WITHOUT_DAC` cannot run here, or None.
NO_WITHOUT_DAC: str | None = (
    "root ignores directory permissions and setpriv is missing"
    if os.geteuid() == 0 and shutil.which("setpriv") is None
    else None
)


def cli(
    *argv: str | bytes,
    input: str | None = None,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
    guard: float = HANG_GUARD,
) -> subprocess.CompletedProcess[str]:
    """Run ``trio-agent argv...`` to its end; its stdout and stderr are captured as text.

    Its stdin is ``input`` when given, else ``/dev/null`` (a command that reads stdin meets
    its end at once). ``env`` defaults to :func:`~support.procenv.child_env`, ``cwd`` to this
    process's; ``prefix`` goes before the command (a wrapper such as ``setpriv``).
    """
    return subprocess.run(
        [*prefix, *CLI, *argv],
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=child_env() if env is None else env,
        timeout=guard,
    )


def no_traceback(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """Assert that neither stream of ``proc`` holds a traceback; return ``proc``."""
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def one_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    """The single stderr line of a command that failed with exit ``code``: nothing on stdout,
    no traceback nor internal error, exactly one newline-terminated line on stderr (returned
    without its newline)."""
    no_traceback(proc)
    assert "internal error" not in proc.stderr, proc.stderr  # the CLI's report of a bug
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and proc.stderr.endswith("\n"), proc.stderr
    assert proc.stdout == ""
    return proc.stderr.rstrip("\n")


def stop_while_it_waits(
    args: Sequence[str],
    pidfile: Path,
    stop: signal.Signals,
    *,
    ignoring: signal.Signals | None = None,
) -> None:
    """Run ``trio-agent ARGS`` until the program it drives writes, to ``pidfile``, the pid of
    a process that then waits for ever; send ``stop`` to the CLI. It must exit 128 + the
    signal without a traceback, and that process must be gone by then: by the tests' own
    probe, with no wait of the test's. With ``ignoring``, the CLI is started with that signal
    ignored (``nohup``) and is sent it first: it must go on, to be stopped by ``stop``."""
    cli = subprocess.Popen(
        with_signals([*CLI, *args], ignored=[ignoring] if ignoring else []),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        env=child_env(),
    )
    try:
        waiting = int(until_sync(lambda: pidfile.exists() and pidfile.read_text()))
        assert proc.alive(waiting)
        if ignoring is not None:
            # Were it taken, it would stop the CLI first: 128 + it, not 128 + stop.
            cli.send_signal(ignoring)
        cli.send_signal(stop)
        _, err = cli.communicate(timeout=HANG_GUARD)
        assert cli.returncode == 128 + stop, err
        assert "Traceback" not in err, err
        assert not proc.alive(waiting)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
        if pidfile.exists() and pidfile.read_text():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
