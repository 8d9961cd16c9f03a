"""``trio-agent demo``: the scenarios in a terminal, log on the left, runtime on the right.

After every step one snapshot is printed: the step's caption, the log lines that became
durable during the step (left) beside the runtime state (right), and what the step measured.
It fits 100 columns. Colours are used only on a terminal (and never with ``NO_COLOR``); the
output is otherwise plain lines, so a CI log shows the same thing.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any, Final, TextIO

import trio

from .engine import DemoError, Driver, open_run
from .scenarios import SCENARIOS

WIDTH: Final = 100
LEFT: Final = 57
RIGHT: Final = WIDTH - 2 - LEFT - 3

_RESET: Final = "\x1b[0m"
_TONES: Final = {
    "aborted": "\x1b[31m",
    "error": "\x1b[31m",
    "interrupted": "\x1b[35m",
    "placeholder": "\x1b[33m",
    "dropped": "\x1b[33m",
    "completed": "\x1b[32m",
    "ok": "\x1b[32m",
    "dispatch": "\x1b[36m",
    "chunk": "\x1b[2m",
    "boundary": "\x1b[1m",
    "head": "\x1b[1m",
}

INTRO: Final = (
    "A real agent (scripted model, real bash subprocess) on a real JSONL session in a "
    "temporary directory. Left: the lines of session.jsonl that are durable, read back from "
    "the file. Right: the runtime state the worker process reports, and what /proc says "
    "about the tool's process group. Lines marked + were appended by crash recovery."
)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent) or [""]


class Printer:
    def __init__(self, out: TextIO, color: bool) -> None:
        self.out = out
        self.color = color
        self.shown = 0  # log events already printed in this scenario
        self.cut_shown = False
        self.contrast_shown = False
        self.facts_shown = 0

    def paint(self, text: str, tone: str | None) -> str:
        style = _TONES.get(tone or "")
        return f"{style}{text}{_RESET}" if self.color and style else text

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def rule(self, title: str, char: str) -> None:
        self.line(self.paint(f"{char * 3} {title} ".ljust(WIDTH, char), "head"))

    # -- sections ----------------------------------------------------------------------------

    def intro(self) -> None:
        self.rule("trio-agent demo: Esc, kill -9 then restart, truncate", "═")
        for text in _wrap(INTRO, WIDTH - 2, "  "):
            self.line(text)

    def scenario(self, snap: dict[str, Any]) -> None:
        sc = snap["scenario"]
        self.line()
        self.rule(f"Scenario: {sc['title']}", "━")
        for text in _wrap(sc["summary"], WIDTH - 2, "  "):
            self.line(text)
        self.shown = 0
        self.cut_shown = False
        self.contrast_shown = False
        self.facts_shown = 0
        self.line()
        self.line("  Setup: a new session and an idle agent.")
        self.panes(snap, title="LOG (session.jsonl)")

    def step(self, snap: dict[str, Any], index: int) -> None:
        step = snap["steps"][index]
        self.line()
        self.rule(f"Step {index + 1}/{len(snap['steps'])} · {step['label']}", "─")
        for text in _wrap(step["caption"], WIDTH - 2, "  "):
            self.line(text)
        self.line()
        self.panes(snap, title="LOG · new durable lines")
        facts = snap["facts"][self.facts_shown :]
        self.facts_shown = len(snap["facts"])
        if facts:
            self.line()
            self.line("  checks:")
            for fact in facts:
                for i, text in enumerate(_wrap(fact["text"], WIDTH - 6)):
                    mark = "✓ " if i == 0 else "  "
                    self.line("   " + self.paint(mark + text, fact["tone"]))

    # -- the two panes -------------------------------------------------------------------------

    def panes(self, snap: dict[str, Any], *, title: str) -> None:
        left = list(self.log_lines(snap))
        right = list(runtime_lines(snap["runtime"]))
        self.line(
            "  " + self.paint(title.ljust(LEFT), "head") + " │ " + self.paint("RUNTIME", "head")
        )
        for i in range(max(len(left), len(right))):
            text, tone = left[i] if i < len(left) else ("", None)
            right_text = right[i] if i < len(right) else ""
            cell = self.paint(_clip(text, LEFT).ljust(LEFT), tone)
            self.line(("  " + cell + " │ " + right_text).rstrip())

    def log_lines(self, snap: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
        log = snap["log"]
        items = log["items"]
        new = items[self.shown :]
        self.shown = len(items)
        contrast = snap.get("contrast")
        if not new and contrast is None and (log["cutAfter"] is None or self.cut_shown):
            yield ("(nothing new)" if items else "(only the session header)", "chunk")
        yield from _fold(new)
        if log["cutAfter"] is not None and not self.cut_shown:
            self.cut_shown = True
            yield ("✂ the worker died here: nothing after this line", "aborted")
        if contrast is not None and not self.contrast_shown:
            self.contrast_shown = True
            yield from contrast_lines(contrast)


def _fold(items: Sequence[dict[str, Any]]) -> Iterator[tuple[str, str | None]]:
    """One line per event, except runs of streamed text, which become one line."""
    run: list[dict[str, Any]] = []

    def flush() -> Iterator[tuple[str, str | None]]:
        if run:
            span = f"{run[0]['seq']}-{run[-1]['seq']}" if len(run) > 1 else f"{run[0]['seq']}"
            text = "".join(i["delta"] for i in run).replace("\n", "⏎")
            yield (f'[{span}] assistant/chunk ×{len(run)} "{text}"', "chunk")
            run.clear()

    for item in items:
        if "delta" in item:
            run.append(item)
            continue
        yield from flush()
        mark = "+" if item["origin"] == "recovery" else " "
        yield (f"[{item['seq']}]{mark}{item['text']}", item["tone"])
    yield from flush()


def contrast_lines(contrast: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    t = contrast["truncate"]
    yield ("TRUNCATION would (a report; nothing is written):", "aborted")
    yield (f"  keep {t['keptEvents']} event(s), drop {t['droppedEvents']}:", "aborted")
    for kind, count in t["droppedByType"].items():
        yield (f"    {count} × {kind}", None)
    yield (f"  lose {t['streamedChars']} chars of streamed text", "aborted")
    yield (f"  lose {t['toolOutputBytes']} bytes of tool output", "aborted")
    yield (f"  forget dispatched call(s): {', '.join(t['dispatchedCalls'])}", "aborted")
    for spawned in contrast["spawned"]:
        yield (f"  forget running process group {spawned['pgid']}", "aborted")
    yield (f"  re-queue {t['reclaimedMessages']} claimed message(s)", "dropped")
    c = contrast["complete"]
    yield ("COMPLETION (what a cold open does):", "completed")
    kept = f"  keep all {c['keptEvents']} events, delete {c['deletedEvents']}, append:"
    yield (kept, "completed")
    for item in c["closers"]:
        yield (f"  [{item['seq']}]+{item['text']}", item["tone"])


def runtime_lines(rt: dict[str, Any]) -> Iterator[str]:
    """The right pane: one labelled field per line, wrapped to fit."""

    def field(name: str, text: str) -> Iterator[str]:
        parts = _wrap(text, RIGHT - 10)
        yield f"{name:<9} {parts[0]}"
        for part in parts[1:]:
            yield " " * 10 + part

    for w in rt["workers"]:
        state = w["exit"] or w["state"]
        yield from field(f"worker #{w['generation']}", f"pid {w['pid']} · {state}")
    yield from field("agent", rt["status"])
    current = rt["current"]
    yield from field("holds", "no controller" if current is None else f"controller #{current}")
    for c in rt["controllers"]:
        label = f"#{c['n']}" + (f" turn {c['turn']}" if c["turn"] else " (made at wake)")
        yield from field("ctrl", label)
        for state in c["states"]:
            for i, part in enumerate(_wrap(state, RIGHT - 12)):
                yield " " * 10 + ("· " if i == 0 else "  ") + part
    inbox = rt["inbox"]
    queued = [f'next-turn "{t}"' for t in inbox["next_turn"]]
    queued += [f'next-step "{t}"' for t in inbox["next_step"]]
    yield from field("inbox", "; ".join(queued) if queued else "empty")
    for d in rt["dropped"]:
        yield from field("dropped", f'"{d["text"]}" (cause {d["cause"]}, never ran)')
    for g in rt["groups"]:
        if g["alive"]:
            names = ", ".join(m.split(" ", 1)[1] for m in g["members"])
            state = f"ORPHANED, alive ({names})" if g["orphaned"] else f"running ({names})"
        else:
            state = "gone (no process in /proc)"
        yield from field("pgid", f"{g['pgid']} · {state}")
    progress = rt["progress"]
    if progress["last"]:
        yield from field("progress", f"{progress['lines']} lines, last {progress['last']!r}")
    for o in rt["outcomes"]:
        cause = f", cause {o['cause']}" if o["cause"] else ""
        yield from field("outcome", f"turn {o['turn']} {o['reason']}{cause}")
    if rt["recovery"] is not None:
        yield from field("recovery", f"appended {len(rt['recovery'])} closer(s)")
    fold = rt["fold"]
    unrun = "true" if fold["droppedUnrun"] else "false"
    end = "none" if fold["endSeq"] is None else fold["endSeq"]
    yield from field("fold", f"dropped_unrun {unrun}, end_seq {end}")
    for note in rt["notes"]:
        yield from field("note", note)


async def _ask(out: TextIO) -> bool:
    """Wait for Enter (``--step``); False when the user typed q or input ended."""
    out.write("  [Enter] next step, q then Enter to stop: ")
    out.flush()
    line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
    return bool(line) and line.strip().lower() != "q"


async def play(names: Sequence[str], out: TextIO, *, step: bool, color: bool) -> None:
    printer = Printer(out, color)
    printer.intro()
    for name in names:
        if not await _play_one(name, printer, step=step):
            return
    out.write("\nAll scenarios done; every worker and tool process was stopped.\n")


async def _play_one(name: str, printer: Printer, *, step: bool) -> bool:
    """Play one scenario in its own run; False if the user stopped (``--step``, q)."""
    printed: list[int] = []
    failed: list[DemoError] = []
    async with open_run() as run:
        driver = Driver(SCENARIOS[name], run, dwell=0)

        async def on_step(index: int) -> None:
            printer.step(driver.snapshot(), index)
            printer.out.flush()
            printed.append(index)
            run.notify()

        async with trio.open_nursery() as nursery:

            async def main() -> None:
                try:
                    await driver.main(on_step)
                except DemoError as exc:
                    failed.append(exc)
                    nursery.cancel_scope.cancel()

            nursery.start_soon(main)
            await run.wait_until(lambda: driver.ready, "the scenario to be set up")
            printer.scenario(driver.snapshot())
            for index in range(len(driver.scenario.steps)):
                if step and not await _ask(printer.out):
                    nursery.cancel_scope.cancel()
                    return False
                driver.step()

                def printed_step(i: int = index) -> bool:
                    return i in printed

                await run.wait_until(printed_step, "the step to finish", 120)
            nursery.cancel_scope.cancel()
    if failed:
        raise failed[0]
    return True


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    color = out.isatty() and "NO_COLOR" not in os.environ
    interrupted = False

    async def main() -> None:
        nonlocal interrupted
        # Ctrl+C cancels in order: the running scenario is torn down (worker and tool
        # processes stopped) instead of a KeyboardInterrupt landing at a random spot.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    nonlocal interrupted
                    async for _ in signals:
                        interrupted = True
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(watch)
                await play(names, out, step=args.step, color=color)
                nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    except DemoError as exc:
        out.flush()
        print(f"trio-agent demo: {exc}", file=err)
        return 1
    if interrupted:
        out.write("\ninterrupted; every worker and tool process was stopped.\n")
        return 130
    return 0
