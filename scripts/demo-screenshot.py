#!/usr/bin/env python3
"""Take docs/demo.png: serve the demo, drive headless Chromium through a scenario, screenshot.

    python scripts/demo-screenshot.py [--scenario kill] [--steps 3] [--out docs/demo.png]

Needs Chromium (scripts/ensure-chromium.sh). Uses trio_agent, its dependencies and the small
Chrome DevTools Protocol client of the tests (tests/support/cdp.py), which is not shipped.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.cdp import launch_chromium

from trio_agent.demo.server import serve


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="trio-agent-shot-") as tmp:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(serve, "127.0.0.1", 0)
            async with launch_chromium(Path(tmp) / "profile") as browser:
                url = f"http://127.0.0.1:{port}/#{args.scenario}"
                page = await browser.new_page(url, width=args.width, height=args.height)
                await page.wait_for("window.demo && demo.state && demo.state.ready")
                for n in range(1, args.steps + 1):
                    await page.evaluate("document.getElementById('step').click()")
                    await page.wait_for(
                        f"demo.state.completed >= {n} && demo.state.running === null"
                    )
                await trio.sleep(0.5)  # let the last state render
                png = await page.screenshot()
            nursery.cancel_scope.cancel()
    Path(args.out).write_bytes(png)
    print(f"wrote {args.out} ({len(png)} bytes)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="kill", choices=["esc", "kill", "truncate"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/demo.png"))
    trio.run(main, parser.parse_args())
