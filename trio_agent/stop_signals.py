"""The signals that ask a command to stop, and which of them this process heeds
(spec/cli.md §Stopping signals).

Ctrl-C (SIGINT); ``kill``, ``timeout`` or a service manager (SIGTERM); the terminal closing
(SIGHUP). A signal the process was started with ignored stays ignored, as POSIX tools do:
``nohup`` starts a command with SIGHUP ignored so that it outlives its terminal, and a shell
starts a script's background job (``cmd &``) with SIGINT ignored so that Ctrl-C at the
terminal passes it by. Python keeps an inherited ignore of SIGINT by itself; a command that
takes these signals itself (a handler of its own, or trio's ``open_signal_receiver``, either
of which would replace the ignore) takes only those :func:`heeded` returns.

trio is imported only inside :func:`stop_receiver`: ``conform`` and ``harness`` read this
module without trio.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Final

__all__ = ["STOPPING_SIGNALS", "heeded", "stop_receiver"]

#: Every signal that asks a command to stop, Ctrl-C first.
STOPPING_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def heeded(signals: Iterable[signal.Signals] = STOPPING_SIGNALS) -> tuple[signal.Signals, ...]:
    """Those of ``signals`` not set to be ignored. Ask before taking them: until then each
    is as the process was started with it (or as Python set SIGINT up, which keeps an
    inherited ignore)."""
    return tuple(each for each in signals if signal.getsignal(each) != signal.SIG_IGN)


@contextlib.contextmanager
def stop_receiver() -> Iterator[AsyncIterator[int]]:
    """``trio.open_signal_receiver`` of the heeded stopping signals. When all three are
    ignored it yields an iterator that never yields: trio refuses an empty receiver, and
    nothing can arrive then."""
    import trio  # here, not above: see the module docstring

    signals = heeded()
    if not signals:
        yield _nothing(trio.sleep_forever)
        return
    with trio.open_signal_receiver(*signals) as received:
        yield received


async def _nothing(sleep_forever: Callable[[], Awaitable[object]]) -> AsyncIterator[int]:
    await sleep_forever()
    yield 0  # not reached: the sleep ends only by a cancel
