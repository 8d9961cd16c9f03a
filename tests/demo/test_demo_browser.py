"""A real browser on the real server: headless Chromium steps through every scenario on the page.

Chromium is driven over the Chrome DevTools Protocol with :mod:`support.cdp` (a
trio-websocket client, no automation library). A missing Chromium is a failure, not a skip:
``make test`` installs it (scripts/ensure-chromium.sh).

Every step of every scenario is run at 1280x800 and at 420 px wide, with real key presses
(→ for the next step, Esc for the Esc step). After each step the test waits for the page to
show it (a DOM condition, polled; only the overall hang guard is a clock), takes a screenshot,
and measures with ``getBoundingClientRect``: the rows the step added or struck and the runtime
card it changed are inside the viewport, nothing is wider than the window, no badge sticks out
of its card, the log's text column keeps its width, the checks read as lines of text and no
card row's label sits alone on its line.

Screenshots go to ``<tmp>/shots``, or to ``$TRIO_AGENT_DEMO_SHOTS`` when that is set (kept).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import trio
from support.cdp import INSTALL_HINT, Page, find_chromium, launch_chromium
from support.demo.helpers import HANG_GUARD, ServerProcess, server_process

#: Long: make test runs it, make test-fast leaves it out.
pytestmark = pytest.mark.slow

SIZES = {"wide": (1280, 800), "narrow": (420, 860)}
SCENARIOS = ("esc", "kill", "truncate")
#: The step whose caption the page shows.
VIEWING = "document.querySelector('.hist li.viewing')?.dataset.step"

#: Measuring helpers installed in the page. ``seen(el)``: the element's box is inside the
#: window and inside every scrolling box around it (so the reader sees it without scrolling).
PROBE = r"""
window.__t = {
  seen(el) {
    if (!el) return false;
    const r = el.getBoundingClientRect();
    if (r.height === 0 || r.top < -1 || r.left < -1) return false;
    if (r.bottom > innerHeight + 1 || r.right > innerWidth + 1) return false;
    for (let p = el.parentElement; p; p = p.parentElement) {
      if (!/(auto|scroll|hidden)/.test(getComputedStyle(p).overflowY)) continue;
      const q = p.getBoundingClientRect();
      if (r.top < q.top - 1 || r.bottom > q.bottom + 1) return false;
    }
    return true;
  },
  rowsWith(...needles) {
    const has = (li) => needles.every((n) => li.textContent.includes(n));
    return Array.from(document.querySelectorAll('#log li')).filter(has);
  },
  report() {
    const de = document.documentElement;
    const badges = [];
    for (const b of document.querySelectorAll('.card .badge, .hist .tag')) {
      const r = b.getBoundingClientRect();
      const c = b.closest('.card, .hist > li').getBoundingClientRect();
      if (r.left < c.left - 0.5 || r.right > c.right + 0.5) badges.push(b.textContent);
    }
    const narrowText = [];
    for (const t of document.querySelectorAll('#log li .txt')) {
      const w = t.getBoundingClientRect().width;
      if (t.textContent.trim() && w < 150) narrowText.push(t.textContent);
    }
    // A check is lines of text: as many line boxes as its text needs, not one per snippet.
    const brokenFacts = [];
    for (const li of document.querySelectorAll('#facts li')) {
      const range = document.createRange(); range.selectNodeContents(li);
      const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0);
      const lines = new Set(rects.map((r) => Math.round(r.top))).size;
      const width = rects.reduce((a, r) => a + r.width, 0);
      const need = Math.ceil(width / li.getBoundingClientRect().width) + 1;
      if (lines > need) brokenFacts.push(li.textContent);
    }
    // A card row's label (a key, or a seq number) starts the line its value starts on.
    const orphanLabels = [];
    for (const row of document.querySelectorAll('.card .row')) {
      const label = row.firstElementChild, value = label?.nextElementSibling;
      if (!value || !label.matches('.k, .seq')) continue;
      const top = (el) => Math.round(el.getClientRects()[0]?.top ?? NaN);
      if (Math.abs(top(label) - top(value)) > 4) orphanLabels.push(row.textContent);
    }
    const { scrollWidth } = de;
    return { scrollWidth, innerWidth, badges, narrowText, brokenFacts, orphanLabels };
  },
};
true
"""


class Shots:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.taken: list[Path] = []

    async def take(self, page: Page, name: str) -> None:
        path = self.directory / f"{name}.png"
        path.write_bytes(await page.screenshot())
        self.taken.append(path)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


async def js(page: Page, expression: str) -> Any:
    return await page.evaluate(expression)


async def open_scenario(page: Page, scenario: str) -> list[str]:
    await js(page, f"document.querySelector('[data-scenario={scenario}]').click()")
    await page.wait_for(
        f"demo.state && demo.state.scenario.name === '{scenario}' && demo.state.ready"
        " && demo.state.completed === 0 && !document.getElementById('step').disabled"
    )
    labels: list[str] = await js(page, "demo.state.steps.map(s => s.label)")
    return labels


async def step_done(page: Page, n: int) -> None:
    """Wait until step ``n`` (1-based) has finished and the page shows it as the latest."""
    await page.wait_for(
        f"demo.state.completed === {n} && demo.state.running === null"
        f" && document.querySelector('.hist li.viewing')?.dataset.step === '{n - 1}'"
        " && document.querySelector('#log li.new, .card.changed') !== null"
    )


async def check_layout(page: Page, where: str) -> None:
    report = await js(page, "__t.report()")
    assert report["scrollWidth"] <= report["innerWidth"], f"{where}: wider than the window"
    assert report["badges"] == [], f"{where}: badges outside their cards: {report['badges']}"
    assert report["narrowText"] == [], f"{where}: log text column collapsed"
    assert report["brokenFacts"] == [], f"{where}: a check broken into columns"
    assert report["orphanLabels"] == [], (
        f"{where}: a label alone on its line: {report['orphanLabels']}"
    )


async def check_focus(page: Page, size: str, scenario: str, label: str, where: str) -> None:
    """The rows the step added or struck, and the card it changed, are where the reader looks."""
    if size == "narrow":  # one column: the step's "the rows ↓" button brings them into the window
        await js(page, "document.querySelector('[data-jump=log-pane]').click()")
    new = await js(page, "document.querySelectorAll('#log li.new').length")
    fits = await js(
        page,
        "(() => { const r = document.querySelectorAll('#log li.new'); if (!r.length) return true;"
        " return r[r.length-1].getBoundingClientRect().bottom - r[0].getBoundingClientRect().top"
        " <= document.getElementById('log').clientHeight; })()",
    )
    if new:
        last = "Array.from(document.querySelectorAll('#log li.new')).pop()"
        assert await js(page, f"__t.seen({last})"), f"{where}: the step's last row is out of view"
        if fits:
            assert await js(
                page, "Array.from(document.querySelectorAll('#log li.new')).every(__t.seen)"
            ), f"{where}: some rows the step added are out of view"
    if scenario == "esc" and label == "Press Esc":
        for needles in (("step/end",), ("turn/end", "1 ABORTED")):
            args = ", ".join(json.dumps(n) for n in needles)
            assert await js(page, f"__t.rowsWith({args}).some(li => li.classList.contains('new'))")
            assert await js(page, f"__t.rowsWith({args}).every(__t.seen)"), (
                f"{where}: {needles} out of view"
            )
    if label == "What truncation throws away":
        # The report's heading stays readable: only the rows are struck.
        heading = "getComputedStyle(document.querySelector('.contrast .t h3')).textDecorationLine"
        assert await js(page, heading) == "none", f"{where}: the contrast heading is struck"
        struck = await js(page, "document.querySelectorAll('#log li.would-drop.new').length")
        assert struck >= 10, f"{where}: {struck} struck rows highlighted"
        assert fits, f"{where}: the struck rows do not fit in the log pane"
        assert await js(
            page, "Array.from(document.querySelectorAll('#log li.would-drop')).every(__t.seen)"
        ), f"{where}: some struck rows are out of view"
    if size == "narrow":
        await js(page, "document.querySelector('[data-jump=runtime]').click()")
    card = await js(page, "demo.focus.card && demo.focus.card.dataset.card")
    if card is not None:
        assert await js(page, "__t.seen(demo.focus.card)"), f"{where}: changed card {card} hidden"
    if label == "kill -9 the worker":
        assert card == "groups"
        assert await js(
            page,
            "Array.from(document.querySelectorAll('.card')).filter(c =>"
            " c.textContent.includes('ORPHANED · still running')).every(c =>"
            " c.classList.contains('changed') && __t.seen(c))",
        ), f"{where}: the orphaned group's card is out of view"


async def run_scenario(page: Page, size: str, scenario: str, shots: Shots) -> None:
    labels = await open_scenario(page, scenario)
    await check_layout(page, f"{size}/{scenario}/start")
    await shots.take(page, f"{size}-{scenario}-0-start")
    for n, label in enumerate(labels, start=1):
        where = f"{size}/{scenario}/{n} {label}"
        if label == "Press Esc":
            # The Esc key presses the page's Esc.
            assert "Esc" in await js(page, "document.getElementById('step').textContent")
            await page.press("Escape")
        else:
            await page.press("ArrowRight")
        await step_done(page, n)
        caption = await js(page, "document.getElementById('caption-text').textContent")
        assert caption == await js(page, f"demo.state.steps[{n - 1}].caption")
        await js(page, "window.scrollTo(0, 0)")
        await page.wait_for("window.scrollY === 0")
        await check_layout(page, where)
        if size == "wide":  # the colour legend fits at 1280x800
            assert await js(page, "__t.seen(document.getElementById('legend'))"), where
        await shots.take(page, f"{size}-{scenario}-{n}-{slug(label)}")
        await check_focus(page, size, scenario, label, where)
        if size == "narrow":  # check_focus scrolled the window to the rows, then the card
            await shots.take(page, f"{size}-{scenario}-{n}-{slug(label)}-runtime")
            await js(page, "document.querySelector('[data-jump=log-pane]').click()")
            await shots.take(page, f"{size}-{scenario}-{n}-{slug(label)}-rows")
            # Away from the story, a bar leads back to it.
            if not await js(page, "__t.seen(document.getElementById('caption-title'))"):
                await page.wait_for("document.body.classList.contains('story-away')")
                assert await js(page, "__t.seen(document.getElementById('to-story'))"), where
                await js(page, "document.getElementById('to-story').click()")
                await page.wait_for("__t.seen(document.getElementById('caption-title'))")
            await js(page, "window.scrollTo(0, 0)")
    assert await js(page, "demo.state.done && demo.state.error === null")
    await check_history(page, size, scenario, labels)


async def check_history(page: Page, size: str, scenario: str, labels: list[str]) -> None:
    """Every caption stays readable: ← and → walk the history, and each step is clickable."""
    last = len(labels) - 1
    await page.press("ArrowLeft")
    await page.wait_for(f"{VIEWING} === '{last - 1}'")
    await page.press("ArrowRight")
    await page.wait_for(f"{VIEWING} === '{last}'")
    for i in range(len(labels)):
        await js(page, f"document.querySelector('.hist li[data-step=\"{i}\"] > button').click()")
        await page.wait_for(f"document.querySelector('.hist li.viewing')?.dataset.step === '{i}'")
        assert await js(page, "document.getElementById('caption-text').textContent") == await js(
            page, f"demo.state.steps[{i}].caption"
        )
        # The rows highlighted are the ones that step added (or struck).
        assert await js(page, "document.querySelectorAll('#log li.new, .card.changed').length") > 0
        # The runtime pane is the one of the step viewed, as it stood then.
        assert await js(page, "document.body.dataset.runtimeStep") == str(i)
        if scenario == "kill" and i == 0:
            runtime = await js(page, "document.getElementById('runtime').textContent")
            assert "killed by SIGKILL" not in runtime and "cold open" not in runtime
    if scenario == "esc" and size == "wide":
        await js(page, "window.scrollTo(0, 0)")
        await js(page, "document.querySelector('.hist li[data-step=\"2\"] > button').click()")
        await page.wait_for("document.querySelector('.hist li.viewing')?.dataset.step === '2'")
        assert await js(page, "__t.rowsWith('turn/end', '1 ABORTED').every(__t.seen)")


async def test_browser_steps_every_scenario_at_both_sizes(tmp_path: Path) -> None:
    if find_chromium() is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    kept = os.environ.get("TRIO_AGENT_DEMO_SHOTS")
    shots = Shots(Path(kept) if kept else tmp_path / "shots")
    # A hang guard for the whole run, never a verdict on speed: every wait below is a condition.
    with trio.fail_after(HANG_GUARD * 20):
        async with server_process() as server, launch_chromium(tmp_path / "profile") as browser:
            for size, (width, height) in SIZES.items():
                page = await browser.new_page(server.url, width=width, height=height)
                await page.wait_for("window.demo && demo.scenarios.length === 3 && demo.state")
                await js(page, PROBE)
                if size == "wide":
                    await check_page_basics(page, server)
                    await check_glossary(page)
                    await check_turn_life(page)
                for scenario in SCENARIOS:
                    await run_scenario(page, size, scenario, shots)
                if size == "wide":
                    await check_auto_play(page)
    assert len(shots.taken) >= 2 * 12
    for path in shots.taken:
        assert path.read_bytes().startswith(b"\x89PNG")


async def check_page_basics(page: Page, server: ServerProcess) -> None:
    assert await js(page, "document.title") == "trio_agent · Esc, kill -9 and the next session"
    labels = await js(
        page, "Array.from(document.querySelectorAll('#scenarios button')).map(b => b.textContent)"
    )
    assert labels == ["Esc", "kill -9 → restart", "Truncate (contrast)"]
    # The page loaded nothing but itself: one resource, the document.
    assert await js(page, "performance.getEntriesByType('resource').length") == 0
    assert await js(page, "location.origin") == server.origin


async def check_glossary(page: Page) -> None:
    await js(page, "document.getElementById('glossary-open').click()")
    await page.wait_for("!document.getElementById('glossary').classList.contains('hidden')")
    terms = await js(
        page, "Array.from(document.querySelectorAll('#glossary dt')).map(d => d.textContent)"
    )
    for term in ("Splice", "Claim", "Cold open", "Checkpoint", "Dispatch marker", "Tick"):
        assert term in terms
    assert await js(page, "__t.seen(document.querySelector('#glossary dt'))")
    await page.press("Escape")  # Esc closes the glossary first
    await page.wait_for("document.getElementById('glossary').classList.contains('hidden')")


async def check_turn_life(page: Page) -> None:
    """The diagram of a turn's life (the SVG the tutorial shows) opens over the page, is
    seen, marks Esc and kill -9, and Esc closes it without pressing Esc in the story."""
    await js(page, "document.getElementById('turnlife-open').click()")
    await page.wait_for("!document.getElementById('turnlife').classList.contains('hidden')")
    assert await js(page, "__t.seen(document.querySelector('#turnlife svg'))")
    width = await js(page, "document.querySelector('#turnlife svg').getBoundingClientRect().width")
    assert width >= 360, width  # drawn, not collapsed
    marks = await js(
        page,
        "[document.getElementById('turn-life-esc'), document.getElementById('turn-life-kill')]"
        ".map(g => g && g.textContent.replace(/\\s+/g, ' ').trim())",
    )
    assert marks[0].startswith("Esc: cancel(user)") and marks[1].startswith("kill -9"), marks
    await page.press("Escape")
    await page.wait_for("document.getElementById('turnlife').classList.contains('hidden')")


async def check_auto_play(page: Page) -> None:
    """Auto-play is opt-in and runs the scenario through by itself (reading time set to 0);
    Next restarts its countdown, even with the pointer resting on the story."""
    await open_scenario(page, "esc")
    await js(page, "demo.dwell = 1000; document.getElementById('play').click()")
    await page.wait_for("demo.state.completed === 1 && demo.autoFor === 1")
    # The pointer rests on the story: auto-play pauses.
    await js(
        page, "document.getElementById('story').dispatchEvent(new PointerEvent('pointermove'))"
    )
    await page.wait_for("demo.paused === true")
    await js(page, "document.getElementById('step').click()")
    # A fresh countdown for step 2, and running: it goes down, not paused.
    await page.wait_for("demo.state.completed === 2 && demo.autoFor === 2")
    await page.wait_for("demo.autoLeft < 1000 && demo.autoLeft > 900 && demo.paused === false")
    # With the reading time set to 0, auto-play runs the rest through by itself.
    await js(page, "demo.dwell = 0; demo.autoLeft = 0")
    await page.wait_for("demo.state.done && demo.state.running === null")
    assert await js(page, "demo.state.error") is None
    # The reading time is the caption's length at 200 words a minute, plus two seconds.
    words = await js(page, "demo.state.steps[2].caption.split(/\\s+/).length")
    await js(page, "demo.dwell = null")
    assert await js(page, "demo.readingTime(demo.state, 2)") >= 2 + words * 60 // 200
