"""A real browser on the real server: headless Chromium plays every scenario on the page.

Chromium is driven over the Chrome DevTools Protocol with :mod:`trio_agent.demo.cdp` (a
trio-websocket client, no automation library). A missing Chromium is a failure, not a skip:
``make test`` installs it (scripts/ensure-chromium.sh).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from demo_helpers import HANG_GUARD, ServerProcess, server_process

from trio_agent.demo.cdp import INSTALL_HINT, Page, find_chromium, launch_chromium

LOG_TEXT = "Array.from(document.querySelectorAll('#log li')).map(li => li.textContent)"


async def play(page: Page, scenario: str) -> list[str]:
    """Click the scenario's button, then Play; wait for the last step; return the log rows."""
    await page.evaluate(f"document.querySelector('[data-scenario={scenario}]').click()")
    await page.wait_for(
        f"demo.state && demo.state.scenario.name === '{scenario}' && demo.state.ready"
        " && demo.state.completed === 0"
    )
    assert await page.evaluate("document.getElementById('play').disabled") is False
    await page.evaluate("document.getElementById('play').click()")
    await page.wait_for(
        "demo.state.done && document.body.dataset.done === '1'", timeout=HANG_GUARD * 2
    )
    assert await page.evaluate("demo.state.error") is None
    rows: list[str] = await page.evaluate(LOG_TEXT)
    return rows


def index_of(rows: list[str], *needles: str, start: int = 0) -> int:
    for i in range(start, len(rows)):
        if all(n in rows[i] for n in needles):
            return i
    raise AssertionError(f"no log row with {needles} after row {start}: {rows}")


async def test_browser_plays_every_scenario(tmp_path: Path) -> None:
    if find_chromium() is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    with trio.fail_after(HANG_GUARD * 5):
        async with server_process() as server, launch_chromium(tmp_path / "profile") as browser:
            page = await browser.new_page(f"{server.url}?dwell=0.2", width=1440, height=1000)
            await page.wait_for("window.demo && demo.scenarios.length === 3 && demo.state")
            await check_page_basics(page, server)

            rows = await play(page, "esc")
            aborted = index_of(rows, "turn/end", "ABORTED")
            assert index_of(rows, "tool/result", "ABORTED") < aborted
            assert index_of(rows, "inbox/spliced", "DROPPED") < aborted
            index_of(rows, "turn/end", "COMPLETED", start=aborted)
            facts = await page.evaluate("demo.state.facts.map(f => f.text)")
            assert any("dropped_unrun is true" in f for f in facts)
            (tmp_path / "esc.png").write_bytes(await page.screenshot())

            rows = await play(page, "kill")
            cut = index_of(rows, "kill -9")
            interrupted = index_of(rows, "turn/end", "INTERRUPTED", start=cut)
            assert index_of(rows, "TOOL_OUTCOME_UNKNOWN", start=cut) < interrupted
            assert "recovery" in rows[interrupted].lower()
            index_of(rows, "turn/end", "COMPLETED", start=interrupted)
            runtime = await page.evaluate("document.getElementById('runtime').textContent")
            assert "killed by SIGKILL" in runtime and "gone" in runtime
            (tmp_path / "kill.png").write_bytes(await page.screenshot())

            rows = await play(page, "truncate")
            contrast = await page.evaluate("document.getElementById('contrast').textContent")
            assert "Truncation would" in contrast and "Completion" in contrast
            assert "events dropped" in contrast and "0 deleted" in contrast
            drops = [r for r in rows if "truncate drops" in r.lower()]
            assert len(drops) >= 10
            cut = index_of(rows, "kill -9")
            index_of(rows, "turn/end", "INTERRUPTED", start=cut)
            (tmp_path / "truncate.png").write_bytes(await page.screenshot())

    for name in ("esc", "kill", "truncate"):
        assert (tmp_path / f"{name}.png").read_bytes().startswith(b"\x89PNG")


async def check_page_basics(page: Page, server: ServerProcess) -> None:
    assert await page.evaluate("document.title") == "trio_agent · Esc, kill -9 and the next session"
    labels = await page.evaluate(
        "Array.from(document.querySelectorAll('#scenarios button')).map(b => b.textContent)"
    )
    assert labels == ["Esc", "kill -9 → restart", "Truncate (contrast)"]
    # The page loaded nothing but itself: one resource, the document.
    resources = await page.evaluate("performance.getEntriesByType('resource').length")
    assert resources == 0
    assert await page.evaluate("location.origin") == server.origin
