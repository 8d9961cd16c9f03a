"""``trio-agent demo --step`` on an 80x24 terminal: every screen fits the window and shows
its step's heading and caption; the banner names the scenario.

The demo runs on a real pseudo-terminal (its stdin and stdout) of 24 rows; the test answers
each prompt with Enter and cuts the output into screens at the prompts. A screen is what the
reader sees before pressing Enter: it must be at most 24 lines, prompt included, and a screen
that shows any of a step's panes must also show that step's heading, so the caption has not
scrolled away.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios

from support.cli import CLI
from support.demo.helpers import HANG_GUARD
from support.polling import until_sync
from support.procenv import REPO, child_env

from trio_agent.demo.scenarios import SCENARIOS
from trio_agent.demo.terminal import Block, pages

ROWS, COLUMNS = 24, 80
PROMPT = re.compile(r"\[Enter\] (?:next|more)[^\n]*?stop: ")


def test_pages_keep_the_heading_atop_every_screen() -> None:
    block = Block(["pre"], ["", "HEAD", "caption"], ["", "HEAD (continued)", "caption"], [])
    body = [f"row {i}" for i in range(40)]
    block = Block(block.pre, block.head, block.cont, body)
    screens = pages(block, 12)
    assert all(len(screen) + 1 <= 12 for screen in screens)
    assert screens[0][:4] == ["pre", "", "HEAD", "caption"]
    assert all(screen[1] == "HEAD (continued)" for screen in screens[1:])
    assert [r for screen in screens for r in screen if r.startswith("row")] == body
    assert pages(block, None) == [block.lines()]
    small = Block([], ["h"], ["h"], ["a", "b"])
    assert pages(small, 24) == [["h", "a", "b"]]


def test_step_on_a_small_terminal_pages_each_step_under_its_caption() -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = child_env()
    for name in ("COLUMNS", "LINES"):
        env.pop(name, None)
    env["NO_COLOR"] = "1"
    proc = subprocess.Popen(
        [*CLI, "demo", "kill", "--step"],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    os.close(slave)
    out = ""
    answered = 0
    try:
        while True:
            ready, _, _ = select.select([master], [], [], HANG_GUARD)
            assert ready, "the demo printed nothing for the hang guard"
            try:
                data = os.read(master, 65536)
            except OSError as exc:  # EIO: every writer of the terminal is gone
                if exc.errno != errno.EIO:
                    raise
                break
            if not data:
                break
            out += data.decode(errors="replace").replace("\r\n", "\n")
            while len(PROMPT.findall(out)) > answered:
                os.write(master, b"\r")
                answered += 1
    finally:
        os.close(master)
        until_sync(lambda: proc.poll() is not None, guard=HANG_GUARD)
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
    assert proc.returncode == 0, stderr
    assert out.startswith("═══ trio-agent demo kill: kill -9, then restart")
    screens = [s for s in re.split(r"(?<=stop: )\n?", out)]
    steps = SCENARIOS["kill"].steps
    assert answered >= len(steps) + 1  # more than one prompt per step: some were paged
    seen: set[int] = set()
    for screen in screens[:-1]:  # the last holds the end, after the last prompt
        lines = screen.split("\n")
        assert len(lines) <= ROWS, f"a screen of {len(lines)} lines:\n{screen}"
        shows_step = any(k in screen for k in ("LOG ·", "RUNTIME", "checks:"))
        headings = re.findall(r"─── Step (\d+)/\d+ · ", screen)
        if shows_step and "Setup:" not in screen and "Scenario:" not in screen:
            assert headings, f"a screen of a step without its heading:\n{screen}"
            seen.update(int(n) for n in headings)
    assert seen == set(range(1, len(steps) + 1))
