"""``trio-agent demo all`` in a non-TTY: stable, complete, plain, and it cleans up after itself.

The golden file holds the *structure* of the output: section headers, captions, the event
types of the log pane in order, the truncate report's lines and the checks, with every number
replaced by ``#``. Tool output lines (their count depends on timing) are left out, and so is
the runtime pane (pids). Set ``TRIO_AGENT_UPDATE_GOLDEN=1`` to rewrite the golden file after
an intended change, and review the diff.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from demo_helpers import HANG_GUARD, REPO, child_env

from trio_agent.demo.scenarios import SCENARIOS
from trio_agent.demo.terminal import LEFT, WIDTH

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

    for raw in output.splitlines():
        line = raw.rstrip()
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


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trio_agent", "demo", *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD * 3,
        env={**child_env(), "NO_COLOR": ""},
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def test_demo_all_non_tty_is_stable_and_complete() -> None:
    done = run_demo("all")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    assert "\x1b" not in out  # no colours, no cursor movement, when not on a terminal
    assert "\r" not in out
    assert all(len(line) <= WIDTH for line in out.splitlines()), "wider than 100 columns"

    # Every scenario, every step and every caption is there, in order.
    position = 0
    for scenario in SCENARIOS.values():
        position = out.index(f"Scenario: {scenario.title}", position)
        for n, step in enumerate(scenario.steps, start=1):
            position = out.index(f"Step {n}/{len(scenario.steps)} · {step.label}", position)
            first_words = " ".join(step.caption.split()[:8])
            assert first_words in " ".join(out[position:].split())
    assert out.rstrip().endswith("every worker and tool process was stopped.")

    got = structure(out)
    if os.environ.get("TRIO_AGENT_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text("\n".join(got) + "\n", encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8").splitlines()
    assert got == expected


def test_demo_runtime_pane_shows_the_runtime_story() -> None:
    done = run_demo("esc")
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
