"""``trio-agent demo all`` in a non-TTY: stable, complete, plain, and it cleans up after itself;
laid out for the width it is given (or the terminal's), and keeping its sessions on request.

The golden file holds the *structure* of the output: section headers, captions, the event
types of the log pane in order, the truncate report's lines and the checks, with every number
replaced by ``#``. Tool output lines (their count depends on timing) are left out, and so are
the rows listed as arriving between two steps and the runtime pane (pids). Set
``TRIO_AGENT_UPDATE_GOLDEN=1`` to rewrite the golden file after an intended change, and review
the diff.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import termios
from pathlib import Path

import pytest
from support import proc
from support.cli import CLI, cli
from support.demo.helpers import HANG_GUARD
from support.polling import until_sync
from support.procenv import REPO, child_env, with_signals

from trio_agent.demo.scenarios import SCENARIOS
from trio_agent.demo.terminal import Layout, display_width

WIDTH = 100
LEFT = Layout(WIDTH).left

GOLDEN = Path(__file__).with_name("golden") / "demo-all.txt"
_EVENT = re.compile(r"^\[(\d+(?:-\d+)?)\]([+ ])(\S+)")


def _digits(text: str) -> str:
    text = re.sub(r"sha256 [0-9a-f]+", "sha256 <hex>", text)
    text = re.sub(r"in /proc \([^)]*\)", "in /proc (<members>)", text)  # sampled at any moment
    return re.sub(r"\d+", "#", text)


def _pane_row(line: str) -> bool:
    """A row of the two panes: the separator sits right after the left column."""
    return line[2 + LEFT : 2 + LEFT + 2] == " │"


def structure(output: str) -> list[str]:
    """The stable skeleton of the demo's output (see the module docstring)."""
    records: list[str] = []
    paragraph: list[str] = []
    check: list[str] = []

    def flush() -> None:
        if paragraph:
            records.append("   " + " ".join(paragraph))
            paragraph.clear()
        if check:
            records.append("  ✓ " + _digits(" ".join(check)))
            check.clear()

    meanwhile = False
    for raw in output.splitlines():
        line = raw.rstrip()
        # Rows that arrived between two steps: how many depends on timing.
        if re.match(r"^  … still step \d+, while you read:$", line):
            meanwhile = True
            continue
        if meanwhile and re.match(r"^    \[\d+(?:-\d+)?\]", line):
            continue
        meanwhile = False
        if line[:3] in ("═══", "━━━", "───"):
            flush()
            records.append(line.strip("═━─ "))
            continue
        if _pane_row(line):  # keep the log side only
            flush()
            left = line[2 : 2 + LEFT].strip()
            match = _EVENT.match(left)
            if match:
                _, mark, first = match.groups()
                if first == "tool/output":
                    continue  # how many lines arrive before an action depends on timing
                if first == "assistant/chunk" and "×" in left:
                    first += " ×" + left.split("×", 1)[1].split(" ", 1)[0]
                records.append(f"    log{mark}{first}")
            elif left and left not in ("(nothing new)",):
                records.append("    " + _digits(left))
            continue
        stripped = line.strip()
        if stripped.startswith("✓ "):
            flush()
            check.append(stripped[2:])
        elif check and stripped and line.startswith("     "):
            check.append(stripped)
        elif stripped in ("checks:", ""):
            flush()
        else:
            if check:
                flush()
            paragraph.append(stripped)
    flush()
    return records


def _env(**extra: str) -> dict[str, str]:
    """The child's environment: plain output, no inherited COLUMNS unless given."""
    env = child_env()
    env.pop("COLUMNS", None)
    env["NO_COLOR"] = ""
    env.update(extra)
    return env


def run_demo(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``trio-agent demo args...``, plain unless ``env`` says otherwise."""
    return cli("demo", *args, cwd=cwd, env=_env() if env is None else env, guard=HANG_GUARD * 3)


def assert_complete(out: str) -> None:
    """Every scenario, every step and every caption is there, in order, in any layout."""
    words = " ".join(out.split())
    position = 0
    for scenario in SCENARIOS.values():
        position = words.index(f"Scenario: {scenario.title}", position)
        for n, step in enumerate(scenario.steps, start=1):
            position = words.index(f"Step {n}/{len(scenario.steps)} · {step.label}", position)
            first_words = " ".join(step.caption.split()[:8])
            assert first_words in words[position:]
    assert "every worker and tool process was stopped." in words


def assert_fits(out: str, width: int) -> None:
    too_wide = [line for line in out.splitlines() if display_width(line) > width]
    assert not too_wide, f"wider than {width} columns: {too_wide[:3]}"


def side_by_side(out: str) -> bool:
    """True for the two-column layout, False for the stacked one (asserted consistent)."""
    lines = out.splitlines()
    beside = [line for line in lines if line.rstrip().endswith(" │ RUNTIME")]
    stacked = [line for line in lines if line.strip() == "RUNTIME"]
    assert bool(beside) != bool(stacked), "both layouts, or neither"
    if stacked:
        assert not any(" │ " in line for line in lines)
    return bool(beside)


@pytest.mark.slow  # long: make test-fast leaves it out
def test_demo_all_non_tty_is_stable_and_complete() -> None:
    done = run_demo("all", "--width", str(WIDTH))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    assert "\x1b" not in out  # no colours, no cursor movement, when not on a terminal
    assert "\r" not in out
    assert_fits(out, WIDTH)
    assert side_by_side(out)
    assert_complete(out)
    assert "All scenarios done; every worker and tool process was stopped." in out
    # It ends by pointing to the paced ways to read it: --step, and the page.
    ending = " ".join(out[out.index("All scenarios done") :].split())
    assert "trio-agent demo --step" in ending and "make serve" in ending

    got = structure(out)
    if os.environ.get("TRIO_AGENT_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text("\n".join(got) + "\n", encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8").splitlines()
    assert got == expected


def test_demo_runtime_pane_shows_the_runtime_story() -> None:
    done = run_demo("esc", "--width", str(WIDTH))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if _pane_row(line)]
    right = "\n".join(line[2 + LEFT + 3 :] for line in rows)
    for needle in (
        "· cancelled, cause user",
        "· released before turn/end",
        "turn 1 aborted, cause user",
        "turn 2 completed",
        "(cause user, never ran)",
        "gone (no process in",
    ):
        assert needle in right
    assert rows and all(len(line[2 : 2 + LEFT]) == LEFT for line in rows)


def test_demo_rejects_unknown_scenario() -> None:
    done = run_demo("nope")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


@pytest.mark.slow  # long: make test-fast leaves it out
@pytest.mark.parametrize(("width", "beside"), [(80, False), (120, True), (60, False)])
def test_demo_all_fits_the_width(width: int, beside: bool) -> None:
    done = run_demo("all", "--width", str(width))
    assert done.returncode == 0, done.stderr  # every scenario's checks passed
    assert done.stderr == ""
    assert_fits(done.stdout, width)
    assert side_by_side(done.stdout) is beside
    assert_complete(done.stdout)
    assert "checks:" in done.stdout


def test_demo_piped_uses_columns() -> None:
    done = run_demo("esc", env=_env(COLUMNS="70"))
    assert done.returncode == 0, done.stderr
    assert_fits(done.stdout, 70)
    assert not side_by_side(done.stdout)


def _winsize(fd: int, columns: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))


def test_demo_on_a_terminal_uses_its_width() -> None:
    """On a real pseudo-terminal, no --width and no COLUMNS: the window's size, in colour."""
    master, slave = pty.openpty()
    _winsize(slave, 90)
    env = child_env()
    for name in ("COLUMNS", "LINES", "NO_COLOR"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [*CLI, "demo", "esc"],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError as exc:  # EIO: every writer of the terminal is gone
                if exc.errno != errno.EIO:
                    raise
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        code = proc.wait(timeout=HANG_GUARD)
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
    assert code == 0, stderr
    out = b"".join(chunks).decode()
    assert "\x1b[" in out  # colour on a terminal: the width must ignore the escapes
    assert_fits(out, 90)
    assert not side_by_side(re.sub(r"\x1b\[[0-9;]*m", "", out))


def test_demo_rejects_a_width_too_narrow() -> None:
    done = run_demo("esc", "--width", "10")
    assert done.returncode == 2
    assert "too narrow" in done.stderr
    assert "Traceback" not in done.stderr


def test_demo_rejects_a_width_too_wide() -> None:
    done = run_demo("esc", "--width", "1001")
    assert (done.returncode, done.stdout) == (2, "")
    assert "1001 columns is too wide (at most 1000)" in done.stderr
    assert "Traceback" not in done.stderr


def test_demo_piped_with_an_absurd_columns_draws_at_most_the_widest_layout() -> None:
    """``COLUMNS=100000`` lays the demo out for 1000 columns: its rules span that, no more."""
    done = run_demo("esc", env=_env(COLUMNS="100000"))
    assert done.returncode == 0, done.stderr
    assert_fits(done.stdout, 1000)
    assert max(display_width(line) for line in done.stdout.splitlines()) == 1000
    assert side_by_side(done.stdout)


def _kept_paths(out: str) -> list[Path]:
    tail = out[out.index("Sessions kept in the store root") :]
    return [Path(line.strip()) for line in tail.splitlines() if line.endswith("session.jsonl")]


@pytest.mark.slow  # long: make test-fast leaves it out
def test_demo_keep_leaves_checkable_sessions(tmp_path: Path) -> None:
    done = run_demo("all", "--width", "80", "--keep", "kept", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_fits(done.stdout, 80)
    assert "trio-agent show PATH" in done.stdout and "trio-agent check PATH" in done.stdout
    paths = _kept_paths(done.stdout)
    assert [p.parent.name for p in paths] == list(SCENARIOS)  # one store root, one id each
    assert {p.parent.parent for p in paths} == {Path("kept")}
    for path in paths:
        assert (tmp_path / path).is_file()
        # Balanced: every turn ended; for kill and truncate that is the repaired log.
        checked = cli("check", "--balanced", str(path), cwd=tmp_path, env=_env())
        assert checked.returncode == 0, checked.stdout + checked.stderr
        shown = cli("show", str(path), cwd=tmp_path, env=_env())
        assert shown.returncode == 0, shown.stderr
    kill = (tmp_path / paths[1]).read_text(encoding="utf-8")
    assert "TOOL_OUTCOME_UNKNOWN" in kill and '"interrupted"' in kill

    # A second run keeps its sessions beside the first ones, under fresh ids.
    again = run_demo("esc", "--width", "80", "--keep", "kept", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [p.parent.name for p in _kept_paths(again.stdout)] == ["esc-2"]


def test_demo_keep_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    done = run_demo("esc", "--keep", "f", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "trio-agent demo: --keep f: is not a directory\n"  # not "File exists"


@pytest.mark.parametrize(
    ("stop", "ignored"),
    [
        (signal.SIGINT, None),
        (signal.SIGTERM, None),
        (signal.SIGHUP, None),
        (signal.SIGTERM, signal.SIGHUP),
        (signal.SIGTERM, signal.SIGINT),
    ],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGTERM-nohup", "SIGTERM-background"],
)
def test_a_stopping_signal_tears_the_scenario_down(
    stop: signal.Signals, ignored: signal.Signals | None
) -> None:
    """Ctrl-C, SIGTERM or SIGHUP (the terminal closed) mid-scenario: every process the demo
    started is stopped before it exits 128 + the signal (SIGHUP once ended the demo by its
    default action, without tearing the scenario down; SIGTERM exited 130, Ctrl-C's code).
    Started with a signal ignored (``nohup``'s SIGHUP, a background job's SIGINT), the demo
    is sent it first and goes on (it once took it): spec/cli.md §Stopping signals."""
    demo = subprocess.Popen(
        with_signals([*CLI, "demo", "esc"], ignored=[ignored] if ignored else []),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(TRIO_AGENT_DEMO_PACE="10"),  # slow: the signal comes mid-scenario
    )
    try:

        def worker() -> bool:  # the scenario's worker is running (so the demo watches signals)
            kids = proc.children_of(demo.pid)
            return any("trio_agent.demo.worker" in proc.cmdline(pid) for pid in kids)

        until_sync(worker)
        started = proc.descendants(demo.pid)
        if ignored is not None:
            demo.send_signal(ignored)  # were it taken, the demo would exit 128 + it
        demo.send_signal(stop)
        out, err = demo.communicate(timeout=HANG_GUARD)
        assert demo.returncode == 128 + stop, err
        assert "interrupted; every worker and tool process was stopped." in out, out
        assert [pid for pid in started if proc.alive(pid)] == []
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
