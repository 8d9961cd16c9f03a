"""``trio-agent demo``: the scenarios in a terminal, log beside (or above) the runtime.

After every step one snapshot is printed: the step's caption, the log lines that became
durable during the step beside the runtime state, and what the step measured. The output
fits the terminal's width (``--width N`` sets it; piped, ``COLUMNS`` or 100): at
:data:`SIDE_BY_SIDE` columns or more the two panes sit side by side, below that they are
stacked, the log above the runtime, each under its heading. No line is wider than the width:
prose wraps at word boundaries, and only what cannot wrap (a log record, one line per event)
is cut with an ellipsis. Colours are used only on a terminal (and never with ``NO_COLOR``);
the output is otherwise plain lines, so a CI log shows the same thing.

With ``--step`` the demo waits for Enter before each step. On a terminal, a step taller
than the window is paged (:meth:`Printer.show`): every page starts with the step's heading
and caption, so the caption never scrolls away, and the rest waits for Enter. Log lines that
became durable while the reader read (the tool going on after its step) are listed under the
step they belong to, before the next step's heading. Runs of ``tool/output`` lines, like runs
of streamed text, are folded into one row.

With ``--keep DIR`` each scenario's session stays in the store root DIR (session ids ``esc``,
``kill``, ``truncate``, or ``esc-2`` and so on when taken) and the log paths are printed at
the end, for ``trio-agent show`` and ``trio-agent check``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

import attrs
import trio

from ..stop_signals import stop_receiver
from ..store import escape_id
from .engine import WAIT, DemoError, Driver, open_run, pace_from_env
from .scenarios import SCENARIOS

#: A hang guard for one step's own actions: longer than each of its waits (``WAIT``), so
#: a stuck wait names what it waited for first.
STEP_GUARD: Final = 4 * WAIT

#: The width when none is known (piped without ``COLUMNS``).
DEFAULT_WIDTH: Final = 100
#: From this width up the panes sit side by side; below it they are stacked.
SIDE_BY_SIDE: Final = 100
#: The narrowest layout; a narrower terminal gets this width (``--width`` refuses less).
MIN_WIDTH: Final = 40
#: The widest layout; a wider terminal or ``COLUMNS`` gets this width (``--width`` refuses
#: more). Rules are drawn across the whole width, so ``COLUMNS=100000`` would otherwise
#: print 100,000 columns a rule.
MAX_WIDTH: Final = 1000

_RESET: Final = "\x1b[0m"
#: The palette, one meaning per colour; the same meanings as the web page and ``trio-agent
#: show`` (the table is in docs/demo.md): red = ended by cancel (or an error), violet = the
#: crash and what crash recovery wrote, yellow = a repair placeholder or input dropped unrun,
#: green = completed and passed checks, blue = live work (queue, claim), cyan = the dispatch
#: marker. Keys are the tones the engine gives log items.
_TONES: Final = {
    "aborted": "\x1b[31m",
    "error": "\x1b[31m",
    "interrupted": "\x1b[35m",
    "placeholder": "\x1b[33m",
    "dropped": "\x1b[33m",
    "completed": "\x1b[32m",
    "ok": "\x1b[32m",
    "queue": "\x1b[34m",
    "claim": "\x1b[34m",
    "dispatch": "\x1b[36m",
    "chunk": "\x1b[2m",
    "boundary": "\x1b[1m",
    "head": "\x1b[1m",
}
_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

INTRO: Final = (
    "A real agent (scripted model, real bash subprocess) on a real JSONL session in a "
    "temporary directory. The log pane: the lines of session.jsonl that are durable, read "
    "back from the file. The runtime pane: the state the worker process reports, and what "
    "/proc says about the tool's process group. Lines marked + were appended by crash "
    "recovery."
)


# -- display width ---------------------------------------------------------------------------


def _char_width(char: str) -> int:
    if unicodedata.combining(char) or char in "\u200b\u200d":
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: ANSI escapes take none, wide characters two."""
    return sum(_char_width(c) for c in _ANSI.sub("", text))


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, the cut marked with an ellipsis (plain text only)."""
    if display_width(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        w = _char_width(char)
        if used + w > width - 1:
            break
        kept.append(char)
        used += w
    return "".join(kept) + "…"


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """Wrap at word boundaries; a single word wider than the line is cut with an ellipsis."""
    lines = textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=indent if subsequent is None else subsequent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [clip(line, width) for line in lines] or [""]


@attrs.frozen
class Layout:
    """Where things go at a given width: two columns side by side, or one pane per block."""

    width: int

    @property
    def side_by_side(self) -> bool:
        return self.width >= SIDE_BY_SIDE

    @property
    def left(self) -> int:
        """The log column: from column 2; in a side-by-side row " │ " follows it."""
        return (self.width - 5) * 3 // 5 if self.side_by_side else self.width - 4

    @property
    def right(self) -> int:
        """The runtime column."""
        return self.width - 5 - self.left if self.side_by_side else self.width - 4


def terminal_width(out: TextIO, requested: int | None) -> int:
    """``--width`` if given; the terminal's width on a tty; else ``COLUMNS``, else 100; kept
    within :data:`MIN_WIDTH` and :data:`MAX_WIDTH`."""
    if requested is not None:
        return requested
    if out.isatty():
        width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    else:
        try:
            width = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            width = DEFAULT_WIDTH
        if width <= 0:
            width = DEFAULT_WIDTH
    return min(MAX_WIDTH, max(MIN_WIDTH, width))


def terminal_height(out: TextIO) -> int | None:
    """The window's height in lines on a terminal (a page must fit it); None when piped."""
    if not out.isatty():
        return None
    return max(10, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).lines)


#: A log pane row: its text, its colour, and whether it is prose that may wrap (an event
#: row is one record, one line, cut with an ellipsis when too wide).
Row = tuple[str, str | None, bool]


@attrs.frozen
class Block:
    """What one scenario intro or one step prints, in parts the pager keeps together:
    ``pre`` (rows still belonging to the step before), ``head`` (the heading and caption,
    repeated as ``cont`` atop every further page) and ``body`` (the panes and the checks)."""

    pre: list[str]
    head: list[str]
    cont: list[str]
    body: list[str]

    def lines(self) -> list[str]:
        return [*self.pre, *self.head, *self.body]


def pages(block: Block, height: int | None) -> list[list[str]]:
    """``block`` cut into screens of at most ``height`` lines, one line on each left for the
    prompt below it; every screen starts with the heading and caption (``head`` on the
    first, ``cont`` after it). ``None``: one page. Pure."""
    whole = block.lines()
    if height is None or len(whole) + 1 <= height:
        return [whole]
    first_room = max(3, height - 1 - len(block.pre) - len(block.head))
    room = max(3, height - 1 - len(block.cont))
    chunks = [block.body[:first_room]]
    rest = block.body[first_room:]
    while rest:
        chunks.append(rest[:room])
        rest = rest[room:]
    out = [[*block.pre, *block.head, *chunks[0]]]
    out += [[*block.cont, *chunk] for chunk in chunks[1:]]
    return out


class Printer:
    def __init__(
        self, out: TextIO, color: bool, width: int = DEFAULT_WIDTH, height: int | None = None
    ) -> None:
        self.out = out
        self.color = color
        self.layout = Layout(width)
        self.width = width
        #: The window's height when pages must fit it (``--step`` on a terminal), else None.
        self.height = height
        self._capture: list[str] | None = None
        #: Lines to show atop the next block (the banner, when pages must fit a window).
        self._preface: list[str] = []
        self.shown = 0  # log events already printed in this scenario
        self.cut_shown = False
        self.contrast_shown = False
        self.facts_shown = 0

    def paint(self, text: str, tone: str | None) -> str:
        style = _TONES.get(tone or "")
        return f"{style}{text}{_RESET}" if self.color and style else text

    def line(self, text: str = "") -> None:
        if self._capture is not None:
            self._capture.append(text)
        else:
            self.out.write(text + "\n")

    def capture(self, draw: Any, *args: Any) -> list[str]:
        """The lines ``draw(*args)`` prints, collected instead of written."""
        saved, self._capture = self._capture, []
        try:
            draw(*args)
            return self._capture
        finally:
            self._capture = saved

    async def show(self, block: Block, *, page: bool) -> bool:
        """Write ``block``; with ``page`` and a known height, one screen at a time, asking for
        Enter between screens. False if the reader typed q (or input ended)."""
        screens = pages(block, self.height if page else None)
        for k, screen in enumerate(screens):
            for text in screen:
                self.out.write(text + "\n")
            if k + 1 < len(screens):
                more = f"  [Enter] more ({k + 1}/{len(screens)}), q then Enter to stop: "
                if not await _ask(self.out, self.width, more):
                    return False
        self.out.flush()
        return True

    def para(self, text: str, indent: str = "  ") -> None:
        for part in wrap(text, self.width, indent):
            self.line(part)

    def rule(self, title: str, char: str) -> None:
        title = clip(title, self.width - 5)
        head = f"{char * 3} {title} "
        self.line(self.paint(head + char * (self.width - display_width(head)), "head"))

    # -- sections ----------------------------------------------------------------------------

    def intro(self, names: Sequence[str], keep: Path | None = None) -> None:
        if self.height is not None:  # paged: the banner shares the first screen
            self._preface = self.capture(self._intro, names, keep)
        else:
            self._intro(names, keep)

    def _intro(self, names: Sequence[str], keep: Path | None) -> None:
        if len(names) == 1:
            self.rule(f"trio-agent demo {names[0]}: {SCENARIOS[names[0]].title}", "═")
        else:
            self.rule("trio-agent demo: Esc, kill -9 then restart, truncate", "═")
        self.para(INTRO)
        if keep is not None:
            self.para(f"--keep: the sessions stay in the store root {_shown(keep)} afterwards.")

    def scenario(self, snap: dict[str, Any]) -> Block:
        """The scenario's intro: its title and summary, then the setup's panes."""
        sc = snap["scenario"]
        self.shown = 0
        self.cut_shown = False
        self.contrast_shown = False
        self.facts_shown = 0

        def head(title: str) -> None:
            self.line()
            self.rule(title, "━")
            self.para(sc["summary"])

        def body() -> None:
            self.line()
            self.para("Setup: a new session and an idle agent.")
            self.panes(snap, title="LOG (session.jsonl)")

        preface, self._preface = self._preface, []
        return Block(
            preface,
            self.capture(head, f"Scenario: {sc['title']}"),
            self.capture(head, f"Scenario: {sc['title']} (continued)"),
            self.capture(body),
        )

    def step(self, snap: dict[str, Any], index: int) -> Block:
        """One step: the rows still belonging to the step before, the heading and caption,
        the log rows the step made durable beside the runtime, and its checks."""
        step = snap["steps"][index]
        total = len(snap["steps"])
        pre = self.capture(self.meanwhile, snap, index)

        def head(title: str) -> None:
            self.line()
            self.rule(title, "─")
            self.para(step["caption"])

        title = f"Step {index + 1}/{total} · {step['label']}"
        return Block(
            pre,
            self.capture(head, title),
            self.capture(head, f"{title} (continued)"),
            self.capture(self.step_body, snap),
        )

    def meanwhile(self, snap: dict[str, Any], index: int) -> None:
        """Rows that became durable after step ``index`` - 1 was shown and before step
        ``index`` began: the tool went on while the reader read. Listed under that step."""
        began = snap["log"]["stepBegan"]
        if index == 0 or index >= len(began):
            return
        items = snap["log"]["items"][self.shown : began[index]]
        if not items:
            return
        self.shown = began[index]
        self.line()
        self.line(self.paint(clip(f"  … still step {index}, while you read:", self.width), "head"))
        for text, tone in _fold(items):
            self.line("    " + self.paint(clip(text, self.width - 4), tone))

    def step_body(self, snap: dict[str, Any]) -> None:
        self.line()
        self.panes(snap, title="LOG · new durable lines")
        facts = snap["facts"][self.facts_shown :]
        self.facts_shown = len(snap["facts"])
        if facts:
            self.line()
            self.line("  checks:")
            for fact in facts:
                parts = wrap(fact["text"], self.width - 5)
                for i, text in enumerate(parts):
                    # A check that passed is green, whatever it is about.
                    mark = self.paint("✓", "ok") + " " if i == 0 else "  "
                    self.line("   " + mark + text)

    # -- the two panes -------------------------------------------------------------------------

    def _cells(self, rows: Sequence[Row], width: int) -> list[tuple[str, str | None]]:
        """The log pane's rows fitted to ``width``: prose wrapped, records cut."""
        cells: list[tuple[str, str | None]] = []
        for text, tone, prose in rows:
            if not prose:
                cells.append((clip(text, width), tone))
                continue
            lead = " " * (len(text) - len(text.lstrip(" ")))
            for part in wrap(text.lstrip(" "), width, lead, lead + "  "):
                cells.append((part, tone))
        return cells

    def panes(self, snap: dict[str, Any], *, title: str) -> None:
        layout = self.layout
        left = self._cells(list(self.log_lines(snap)), layout.left)
        right = list(runtime_lines(snap["runtime"], layout.right))
        if not layout.side_by_side:
            self.line("  " + self.paint(clip(title, layout.left + 2), "head"))
            for text, tone in left:
                self.line("    " + self.paint(text, tone))
            self.line("  " + self.paint("RUNTIME", "head"))
            for text in right:
                self.line(("    " + text).rstrip())
            return
        heading = pad(clip(title, layout.left), layout.left)
        self.line("  " + self.paint(heading, "head") + " │ " + self.paint("RUNTIME", "head"))
        for i in range(max(len(left), len(right))):
            text, tone = left[i] if i < len(left) else ("", None)
            right_text = right[i] if i < len(right) else ""
            cell = self.paint(pad(text, layout.left), tone)
            self.line(("  " + cell + " │ " + right_text).rstrip())

    def log_lines(self, snap: dict[str, Any]) -> Iterator[Row]:
        log = snap["log"]
        items = log["items"]
        new = items[self.shown :]
        self.shown = len(items)
        contrast = snap.get("contrast")
        if not new and contrast is None and (log["cutAfter"] is None or self.cut_shown):
            yield ("(nothing new)" if items else "(only the session header)", "chunk", True)
        for text, tone in _fold(new):
            yield (text, tone, False)
        if log["cutAfter"] is not None and not self.cut_shown:
            self.cut_shown = True
            yield ("✂ the worker died here: nothing after this line", "interrupted", True)
        if contrast is not None and not self.contrast_shown:
            self.contrast_shown = True
            yield from contrast_lines(contrast)


def _fold(items: Sequence[dict[str, Any]]) -> Iterator[tuple[str, str | None]]:
    """One line per event, except runs of streamed text and runs of tool output, which
    become one line each (the first and last output line shown)."""
    run: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []

    def span(rows: list[dict[str, Any]]) -> str:
        return f"{rows[0]['seq']}-{rows[-1]['seq']}" if len(rows) > 1 else f"{rows[0]['seq']}"

    def flush() -> Iterator[tuple[str, str | None]]:
        if run:
            text = "".join(i["delta"] for i in run).replace("\n", "⏎")
            yield (f'[{span(run)}] assistant/chunk ×{len(run)} "{text}"', "chunk")
            run.clear()
        if len(output) == 1:
            yield (f"[{output[0]['seq']}] {output[0]['text']}", output[0]["tone"])
        elif output:
            first = output[0]["text"].split(" ", 3)[-1]
            last = output[-1]["text"].split(" ", 3)[-1]
            text = f"[{span(output)}] tool/output ×{len(output)} {first} … {last}"
            yield (text, output[0]["tone"])
        output.clear()

    for item in items:
        if "delta" in item:
            if output:
                yield from flush()
            run.append(item)
            continue
        if item["type"] == "tool/output" and item["origin"] != "recovery":
            if run:
                yield from flush()
            output.append(item)
            continue
        yield from flush()
        mark = "+" if item["origin"] == "recovery" else " "
        yield (f"[{item['seq']}]{mark}{item['text']}", item["tone"])
    yield from flush()


def contrast_lines(contrast: dict[str, Any]) -> Iterator[Row]:
    t = contrast["truncate"]
    yield ("TRUNCATION would (a report; nothing is written):", "head", True)
    yield (f"  keep {t['keptEvents']} event(s), drop {t['droppedEvents']}:", None, True)
    for kind, count in t["droppedByType"].items():
        yield (f"    {count} × {kind}", None, True)
    yield (f"  lose {t['streamedChars']} chars of streamed text", None, True)
    yield (f"  lose {t['toolOutputBytes']} bytes of tool output", None, True)
    calls = ", ".join(t["dispatchedCalls"])
    yield (f"  forget dispatched call(s): {calls}", None, True)
    for spawned in contrast["spawned"]:
        yield (f"  forget the record of process group {spawned['pgid']}", None, True)
    yield (f"  re-queue {t['reclaimedMessages']} claimed message(s)", None, True)
    c = contrast["complete"]
    yield ("COMPLETION (what a cold open does):", "head", True)
    kept = f"  keep all {c['keptEvents']} events, delete {c['deletedEvents']}, append:"
    yield (kept, None, True)
    for item in c["closers"]:
        yield (f"  [{item['seq']}]+{item['text']}", item["tone"], False)


def runtime_lines(rt: dict[str, Any], width: int) -> Iterator[str]:
    """The runtime pane: one labelled field per line, wrapped to ``width`` columns."""

    def field(name: str, text: str) -> Iterator[str]:
        parts = wrap(text, width - 10)
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
            for i, part in enumerate(wrap(state, width - 12)):
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
    if fold.get("why"):
        yield from field("", f"why: {fold['why']}")
    for note in rt["notes"]:
        yield from field("note", note)


async def _ask(out: TextIO, width: int, prompt: str = "") -> bool:
    """Wait for Enter (``--step``); False when the user typed q or input ended."""
    prompt = prompt or "  [Enter] next step, q then Enter to stop: "
    out.write(prompt if display_width(prompt) <= width else "  [Enter] next, q stop: ")
    out.flush()
    line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
    return bool(line) and line.strip().lower() != "q"


@attrs.frozen
class Kept:
    """A session ``--keep`` keeps: its id in the store root and its log file."""

    scenario: str
    session_id: str
    log_path: Path


def fresh_session_id(root: Path, name: str) -> str:
    """``name``, or ``name-2``, ``name-3``... : the first id with no session under ``root``."""
    candidate, n = name, 1
    while (root / escape_id(candidate)).exists():
        n += 1
        candidate = f"{name}-{n}"
    return candidate


async def play(
    names: Sequence[str],
    out: TextIO,
    *,
    step: bool,
    color: bool,
    width: int = DEFAULT_WIDTH,
    keep: Path | None = None,
    kept: list[Kept] | None = None,
    height: int | None = None,
) -> None:
    printer = Printer(out, color, width, height)
    printer.intro(names, keep)
    for name in names:
        session = None
        if keep is not None:
            session = Kept(name, fresh_session_id(keep, name), Path())
        if not await _play_one(name, printer, step=step, keep=keep, session=session, kept=kept):
            return
    printer.line()
    printer.para("All scenarios done; every worker and tool process was stopped.", "")
    if not step:
        printer.para(
            "To read at your own pace, one step per Enter: trio-agent demo --step (or one "
            "scenario: trio-agent demo kill --step). The same story on a web page, with "
            "Next and Back: make serve (trio-agent serve), then open the address it prints.",
            "",
        )


async def _play_one(
    name: str,
    printer: Printer,
    *,
    step: bool,
    keep: Path | None,
    session: Kept | None,
    kept: list[Kept] | None,
) -> bool:
    """Play one scenario in its own run; False if the user stopped (``--step``, q)."""
    printed: dict[int, Block] = {}
    failed: list[DemoError] = []
    opened = open_run() if session is None else open_run(root=keep, session_id=session.session_id)
    async with opened as run:
        if session is not None and kept is not None:
            kept.append(attrs.evolve(session, log_path=run.log_path))
        driver = Driver(SCENARIOS[name], run, dwell=0)

        async def on_step(index: int) -> None:
            # Drawn the moment the step ends; shown (paged, waiting for the reader) below.
            printed[index] = printer.step(driver.snapshot(), index)
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
            steps = driver.scenario.steps
            if not await printer.show(printer.scenario(driver.snapshot()), page=step):
                nursery.cancel_scope.cancel()
                return False
            for index in range(len(steps)):
                prompt = f"  [Enter] next: {steps[index].label}, q then Enter to stop: "
                if step and not await _ask(printer.out, printer.width, prompt):
                    nursery.cancel_scope.cancel()
                    return False
                driver.step()

                def printed_step(i: int = index) -> bool:
                    return i in printed

                # A hang guard for the step's own actions (each bounded, by less); the
                # reader's time is spent below, in show(), with no bound.
                await run.wait_until(printed_step, "the step to finish", STEP_GUARD)
                if not await printer.show(printed[index], page=step):
                    nursery.cancel_scope.cancel()
                    return False
            nursery.cancel_scope.cancel()
    if failed:
        raise ScenarioStopped(
            f"the {name} scenario stopped at {failed[0]}. Every worker and tool process it "
            f"started was stopped; run `trio-agent demo {name}` to play it again."
        )
    return True


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def print_kept(kept: Sequence[Kept], root: Path, out: TextIO, width: int) -> None:
    """Where the kept sessions are, and how to look at them.

    A path is printed whole on a line of its own even when it is wider than the terminal:
    cut, it would name no file.
    """
    present = [k for k in kept if k.log_path.exists()]
    if not present:
        return
    ids = ", ".join(k.session_id for k in present)
    out.write("\n")
    for text in wrap(f"Sessions kept in the store root {_shown(root)} (ids {ids}):", width):
        out.write(text + "\n")
    for k in present:
        out.write(f"  {_shown(k.log_path)}\n")
    hint = "Read one with `trio-agent show PATH`; check it with `trio-agent check PATH`."
    for text in wrap(hint, width):
        out.write(text + "\n")


class ScenarioStopped(DemoError):
    """A scenario could not go on: what happened, where, and how to go on (one line)."""


def _demo_error(exc: BaseException) -> DemoError | None:
    """The :class:`DemoError` in ``exc``, taking exception groups apart (trio wraps a task's
    exception in one); ``None`` if there is none."""
    if isinstance(exc, DemoError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            found = _demo_error(sub)
            if found is not None:
                return found
    return None


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    color = out.isatty() and "NO_COLOR" not in os.environ
    width = terminal_width(out, getattr(args, "width", None))
    height = terminal_height(out) if args.step else None
    keep: Path | None = None
    if getattr(args, "keep", None) is not None:
        keep = Path(args.keep).resolve()
        why: str | None = None
        try:
            keep.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file (or a link to one) where the root belongs
            why = "is not a directory"
        except OSError as exc:
            why = exc.strerror or str(exc)
        if why is not None:
            print(f"trio-agent demo: --keep {args.keep}: {why}", file=err)
            return 2
    try:
        pace_from_env()
    except DemoError as exc:
        print(f"trio-agent demo: {exc}", file=err)
        return 2
    kept: list[Kept] = []
    stopped_by: int | None = None  # the signal that stopped the walkthrough

    async def main() -> None:
        nonlocal stopped_by
        # Ctrl+C (or SIGTERM, or SIGHUP: the terminal closed) cancels in order: the running
        # scenario is torn down (worker and tool processes stopped) instead of a
        # KeyboardInterrupt landing at a random spot, or the process dying with them running.
        # One the demo was started with ignored (nohup's SIGHUP) stays ignored.
        with stop_receiver() as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    nonlocal stopped_by
                    async for signum in signals:
                        stopped_by = signum
                        nursery.cancel_scope.cancel()
                        return

                nursery.start_soon(watch)
                await play(
                    names,
                    out,
                    step=args.step,
                    color=color,
                    width=width,
                    keep=keep,
                    kept=kept,
                    height=height,
                )
                nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    except BaseException as exc:
        failure = _demo_error(exc)
        if failure is None:
            raise
        if keep is not None:
            print_kept(kept, keep, out, width)
        out.flush()
        print(f"trio-agent demo: {failure}", file=err)
        return 1
    if stopped_by is not None:
        out.write("\ninterrupted; every worker and tool process was stopped.\n")
    if keep is not None:
        print_kept(kept, keep, out, width)
    return 0 if stopped_by is None else 128 + stopped_by  # 130 for Ctrl-C
