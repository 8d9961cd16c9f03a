"""A small Chrome DevTools Protocol client over trio-websocket (no browser-automation library).

Used by the browser test and by ``scripts/demo-screenshot.py``::

    async with launch_chromium(profile_dir) as browser:
        page = await browser.new_page("http://127.0.0.1:8765/", width=1440, height=1000)
        await page.wait_for("document.readyState === 'complete'")
        value = await page.evaluate("document.title")
        png = await page.screenshot()

Chromium runs headless with ``--remote-debugging-port=0``; the port it picked is read from
the ``DevToolsActivePort`` file it writes into its profile directory. It runs in its own
process group, which is killed on exit, so no renderer or helper process outlives the block.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import orjson
import trio
import trio_websocket

from support.polling import HANG_GUARD
from trio_agent.procs.census import group_members

#: Names under which Debian and others install Chromium.
BROWSERS: Final = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT: Final = (
    "no Chromium found on PATH (looked for: " + ", ".join(BROWSERS) + "). Install it with "
    "scripts/ensure-chromium.sh (as root: apt-get update && apt-get install -y chromium)"
)


#: Windows virtual key codes of the keys :meth:`Page.press` is used with.
_KEYS: Final = {"Escape": 27, "ArrowLeft": 37, "ArrowRight": 39, "Enter": 13, "Tab": 9}


class CdpError(Exception):
    """A DevTools command failed, or the page did not reach an expected state."""


def find_chromium() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One DevTools connection to the browser; pages share it (flattened sessions)."""

    def __init__(self, ws: trio_websocket.WebSocketConnection, nursery: trio.Nursery) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        nursery.start_soon(self._reader)

    async def _reader(self) -> None:
        try:
            while True:
                message = orjson.loads(await self._ws.get_message())
                waiter = self._pending.pop(message.get("id", -1), None)
                if waiter is not None:
                    waiter.send_nowait(message)
        except trio_websocket.ConnectionClosed:
            for waiter in self._pending.values():
                waiter.close()

    async def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        ident = next(self._ids)
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._pending[ident] = send
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        await self._ws.send_message(orjson.dumps(message).decode())
        try:
            reply = await receive.receive()
        except trio.EndOfChannel:
            raise CdpError(f"{method}: the browser connection closed") from None
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error'].get('message')}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def new_page(self, url: str, *, width: int = 1440, height: int = 1000) -> Page:
        target = await self.call("Target.createTarget", {"url": "about:blank"})
        attached = await self.call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        page = Page(self, attached["sessionId"])
        await page.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        await page.call("Page.enable")
        await page.call("Page.navigate", {"url": url})
        return page


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.browser.call(method, params, self.session)

    async def evaluate(self, expression: str) -> Any:
        """Evaluate a JS expression in the page and return its JSON value."""
        result = await self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CdpError(f"JS error in {expression!r}: {text}")
        return result.get("result", {}).get("value")

    async def wait_for(
        self, expression: str, *, timeout: float | None = None, poll: float = 0.1
    ) -> Any:
        """Poll ``expression`` until it is truthy; return its value.

        A wait is on a condition, not on the clock: without ``timeout`` it polls until the
        condition holds or the caller's own cancel scope (a hang guard) ends it."""
        with trio.move_on_after(float("inf") if timeout is None else timeout):
            while True:
                try:
                    value = await self.evaluate(expression)
                except CdpError:
                    value = None  # e.g. the page is still navigating
                if value:
                    return value
                await trio.sleep(poll)
        raise CdpError(f"gave up after {timeout:g}s waiting for {expression!r}")

    async def press(self, key: str) -> None:
        """Press and release one key (``Escape``, ``ArrowLeft``, ``ArrowRight``, ...) as a
        real keyboard event sent to the page's focused element."""
        code = _KEYS.get(key, 0)
        for kind in ("rawKeyDown", "keyUp"):
            await self.call(
                "Input.dispatchKeyEvent",
                {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code},
            )

    async def screenshot(self) -> bytes:
        result = await self.call("Page.captureScreenshot", {"format": "png"})
        return base64.b64decode(result["data"])


async def _read_port(profile: Path, proc: trio.Process, timeout: float) -> tuple[int, str]:
    port_file = profile / "DevToolsActivePort"
    with trio.move_on_after(timeout):
        while True:
            if proc.poll() is not None:
                raise CdpError(f"chromium exited with code {proc.returncode} before listening")
            with contextlib.suppress(OSError, ValueError):
                lines = port_file.read_text().splitlines()
                if len(lines) >= 2:
                    return int(lines[0]), lines[1]
            await trio.sleep(0.05)
    raise CdpError(f"chromium did not write {port_file} within {timeout:g}s")


@contextlib.asynccontextmanager
async def launch_chromium(
    profile: Path, *, executable: str | None = None, timeout: float = HANG_GUARD
) -> AsyncIterator[Browser]:
    """Start headless Chromium with a fresh profile and connect to it (see the module doc)."""
    exe = executable or find_chromium()
    if exe is None:
        raise CdpError(INSTALL_HINT)
    profile.mkdir(parents=True, exist_ok=True)
    argv = [
        exe,
        "--headless=new",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "--no-sandbox",  # we run as root in CI containers
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--hide-scrollbars",
        "--mute-audio",
        "about:blank",
    ]
    log = open(profile / "chromium.log", "wb")  # noqa: SIM115 - closed in finally
    proc = await trio.lowlevel.open_process(
        argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
    )
    try:
        port, path = await _read_port(profile, proc, timeout)
        url = f"ws://127.0.0.1:{port}{path}"
        async with trio.open_nursery() as nursery:
            async with trio_websocket.open_websocket_url(url, max_message_size=64 << 20) as ws:
                browser = Browser(ws, nursery)
                try:
                    yield browser
                finally:
                    with trio.move_on_after(3, shield=True), contextlib.suppress(Exception):
                        await browser.call("Browser.close")
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            # Give it a moment to exit on its own, without reaping the leader: its zombie keeps
            # the process group id ours until the final SIGKILL below has been sent.
            with trio.move_on_after(5):
                while group_members(proc.pid):
                    await trio.sleep(0.05)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            log.close()
