"""A reader may stay on any step for as long as they like: the story never races them.

The stand-in test suite advances only as far as the steps allow; between steps it waits,
counting its waiting ticks in ``waited``. These tests use that count as a fake clock: the
suite runs at a fast pace (``pace``), and at every step of every scenario the test waits
until the suite has sat through more ticks than it would need to run all of its tests
(:data:`~trio_agent.demo.workdir.TESTS`), the equivalent of more than ten minutes at the
demo's pace of 0.4 s. No sleep decides anything: the waits are on conditions (ticks counted,
processes seen in ``/proc`` by the test itself), with hang guards.

Before the gate, a reader who stayed 90 s on step 1 saw the suite finish by itself; then
``demo kill`` found no orphan and ``demo esc`` a turn that had completed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import IO

import pytest
import trio
from support.cli import CLI
from support.demo.helpers import HANG_GUARD, TAG_VAR, stepped
from support.polling import until, until_sync
from support.proc import pids, tagged
from support.procenv import REPO, child_env

from trio_agent.demo.engine import PACE_VAR, Driver, open_run
from trio_agent.demo.scenarios import SCENARIOS
from trio_agent.demo.workdir import TESTS, allow_tests, prepare_workdir, progress_lines
from trio_agent.log import scan_log

#: Seconds per test for the fake clock (the demo's pace is 0.4 s).
PACE = 0.001
#: Ticks that stand for "ten minutes": more than the whole suite needs, had it not waited.
LONG_STAY = TESTS + 50
#: The suite's argument in its command line (the worker's own command line only quotes it).
SUITE = "./run-tests.sh"


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def _suites_in(workdir: Path) -> list[int]:
    """Live ``run-tests.sh`` processes working in ``workdir``, from this test's own /proc view."""
    found = []
    for pid in pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if SUITE.encode() in cmd.split(b"\0") and _cwd(pid) == str(workdir):
            found.append(pid)
    return found


def _ticks(workdir: Path) -> int:
    try:
        return int((workdir / "waited").read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


async def _stay(workdir: Path) -> None:
    """Stay on the step "for ten minutes": if the suite is running, until it has waited
    :data:`LONG_STAY` more ticks at its gate."""
    if not _suites_in(workdir):
        return
    start = _ticks(workdir)
    await until(lambda: _ticks(workdir) >= start + LONG_STAY, guard=HANG_GUARD, period=0.01)


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_a_reader_may_stay_on_every_step(name: str) -> None:
    with trio.fail_after(HANG_GUARD * 4):
        async with open_run(pace=PACE) as run:
            driver = Driver(SCENARIOS[name], run, dwell=0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(driver.main)
                await run.wait_until(lambda: driver.ready, "setup")
                stayed = 0
                for n in range(1, len(driver.scenario.steps) + 1):
                    driver.step()
                    await run.wait_until(stepped(driver, n), "a step")
                    assert driver.error is None, driver.error
                    if _suites_in(run.workdir):
                        stayed += 1
                        await _stay(run.workdir)
                        # Still held at the gate: the suite did not run to its end meanwhile.
                        assert len(progress_lines(run.workdir)) < TESTS
                        assert _suites_in(run.workdir)
                assert stayed >= 1
                run.poll_log()
                data = run.log_path.read_bytes()
                nursery.cancel_scope.cancel()
    scan = scan_log(data, strict=True)
    assert scan.checker.open_turn is None
    outputs = [e.data.get("text", "") for e in scan.events if e.type == "tool/output"]
    assert not any(f"{TESTS} passed" in str(t) for t in outputs)


async def test_the_suite_waits_at_its_allowance(tmp_path: Path) -> None:
    """The gate itself: the suite runs exactly as many tests as allowed, then waits (as long
    as more than its whole run would take), and goes on when allowed more."""
    work = tmp_path / "work"
    prepare_workdir(work, pace=PACE)
    allow_tests(work, 2)
    proc = await trio.lowlevel.open_process(
        ["./run-tests.sh"], cwd=str(work), stdout=subprocess.DEVNULL, env=child_env()
    )
    try:
        await until(lambda: _ticks(work) >= LONG_STAY, guard=HANG_GUARD, period=0.01)
        assert progress_lines(work) == ["test 1/200 ok", "test 2/200 ok"]
        assert proc.returncode is None and proc.poll() is None
        allow_tests(work, 4)
        await until(lambda: len(progress_lines(work)) >= 4, guard=HANG_GUARD, period=0.01)
        start = _ticks(work)
        await until(lambda: _ticks(work) >= start + 5, guard=HANG_GUARD, period=0.01)
        assert len(progress_lines(work)) == 4
        allow_tests(work, TESTS + 10)  # capped: the suite never finishes by itself
        await until(lambda: len(progress_lines(work)) >= TESTS - 1, guard=HANG_GUARD)
        start = _ticks(work)
        await until(lambda: _ticks(work) >= start + 5, guard=HANG_GUARD, period=0.01)
        assert len(progress_lines(work)) == TESTS - 1
        assert proc.poll() is None
    finally:
        proc.kill()
        await proc.wait()


def _unread(pipe: IO[bytes] | None) -> bytes:
    """What is waiting in ``pipe`` now, without blocking (a grandchild may hold it open)."""
    if pipe is None:
        return b""
    os.set_blocking(pipe.fileno(), False)
    try:
        return pipe.read() or b""
    except BlockingIOError:
        return b""


def test_step_in_the_terminal_waits_for_its_reader(tmp_path: Path) -> None:
    """``trio-agent demo kill --step``: the reader stays on every step before pressing Enter;
    the scenario still completes (exit 0, no error line)."""
    env = child_env()
    env[PACE_VAR] = str(PACE)
    tag = env[TAG_VAR]
    proc = subprocess.Popen(
        [*CLI, "demo", "kill", "--step", "--width", "100"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
    )
    assert proc.stdin is not None and proc.stdout is not None
    out = b""
    try:

        def prompts() -> int:
            nonlocal out
            out += _unread(proc.stdout)
            return out.count(b"[Enter] next")

        for n in range(1, len(SCENARIOS["kill"].steps) + 1):

            def prompted(n: int = n) -> bool:
                return prompts() >= n or proc.poll() is not None

            until_sync(prompted, period=0.01)
            assert proc.poll() is None, (
                out.decode(errors="replace"),
                _unread(proc.stderr).decode(errors="replace"),
            )
            suites = [pid for pid, cmd in tagged(TAG_VAR, tag).items() if SUITE in cmd.split()]
            for pid in suites:
                workdir = _cwd(pid)
                if workdir is not None:
                    start = _ticks(Path(workdir))

                    def stayed(w: str = workdir, s: int = start) -> bool:
                        return _ticks(Path(w)) >= s + LONG_STAY

                    until_sync(stayed, period=0.01)
            proc.stdin.write(b"\n")
            proc.stdin.flush()
        os.set_blocking(proc.stdout.fileno(), True)
        rest, err = proc.communicate(timeout=HANG_GUARD)
        out += rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # On a failure the pipes are still open; left to the garbage collector, they fail
        # whichever test runs next on this worker with a ResourceWarning.
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    text = out.decode()
    assert proc.returncode == 0, (text[-2000:], err.decode())
    assert err == b""
    assert "All scenarios done" in text
