"""What the CLI tests share: a real second process holding a session live (its writer's
flock), for the tests of how the file commands treat a live session (spec/cli.md §Live
sessions)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attrs

from support.polling import HANG_GUARD

HOLDER = textwrap.dedent(
    """
    import sys, trio
    from trio_agent.store import JsonlStore

    async def main() -> None:
        async with JsonlStore(sys.argv[1], reap_orphans=None) as store:
            session = await store.create("s1")
            session.append("turn/start", {"turn": 1})
            session.append("step/start", {"turn": 1, "step": 1})
            await session.flush()
            print(store.path_of("s1"), flush=True)
            await trio.to_thread.run_sync(sys.stdin.read)  # until the test closes it

    trio.run(main)
    """
)


@attrs.define
class Held:
    """Session s1 under ``root``, live in the holder ``proc``; ``path`` is its log."""

    path: str
    proc: subprocess.Popen[str]
    killed: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """A real kill -9 of the holder: its lock goes with it, its log stays as written."""
        self.proc.kill()
        self.proc.wait()
        self.killed = True


@contextlib.contextmanager
def holding(root: Path) -> Iterator[Held]:
    """Run the holder until the block ends: s1 has an open turn and step, flushed. Unless
    the block killed it, the holder must exit 0 once its stdin is closed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    path = proc.stdout.readline().strip()  # printed once the session is live and flushed
    assert path, "the holder died before the session was live"
    held = Held(path, proc)
    try:
        yield held
    finally:
        proc.stdin.close()
        if not held.killed:
            assert proc.wait(HANG_GUARD) == 0
        proc.stdout.close()
