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


@attrs.frozen
class Held:
    """Session s1 under ``root``, live in process ``pid``; ``path`` is its log."""

    path: str
    pid: int


@contextlib.contextmanager
def holding(root: Path) -> Iterator[Held]:
    """Run the holder until the block ends: s1 has an open turn and step, flushed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    path = proc.stdout.readline().strip()  # printed once the session is live and flushed
    assert path, "the holder died before the session was live"
    try:
        yield Held(path, proc.pid)
    finally:
        proc.stdin.close()
        assert proc.wait(HANG_GUARD) == 0
        proc.stdout.close()
