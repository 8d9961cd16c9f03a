"""trio_agent.stop_signals: a stopping signal this process was started with ignored stays
ignored (spec/cli.md §Stopping signals). Each test sets dispositions in this process (the
main thread), sends real signals to itself, and restores what it found."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

import trio
import trio.testing

from trio_agent.stop_signals import STOPPING_SIGNALS, heeded, stop_receiver


@contextlib.contextmanager
def ignoring(*signals: signal.Signals) -> Iterator[None]:
    """Every stopping signal at its default within the block but ``signals``, ignored: as
    if the process had been started so (whatever this test run was started with)."""
    previous = {
        each: signal.signal(each, signal.SIG_IGN if each in signals else signal.SIG_DFL)
        for each in STOPPING_SIGNALS
    }
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def test_heeded_leaves_out_what_is_ignored() -> None:
    with ignoring():
        assert heeded() == STOPPING_SIGNALS
    with ignoring(signal.SIGHUP):
        assert heeded() == (signal.SIGINT, signal.SIGTERM)
        assert heeded([signal.SIGTERM, signal.SIGHUP]) == (signal.SIGTERM,)
    with ignoring(*STOPPING_SIGNALS):
        assert heeded() == ()


def received_after(sent: signal.Signals) -> list[int]:
    """What :func:`stop_receiver` yields once ``sent`` was sent to this process and every
    task is blocked again."""
    got: list[int] = []

    async def main() -> None:
        with stop_receiver() as signals:
            async with trio.open_nursery() as nursery:

                async def take() -> None:
                    async for signum in signals:
                        got.append(signum)

                nursery.start_soon(take)
                await trio.testing.wait_all_tasks_blocked()
                os.kill(os.getpid(), sent)
                # The receiver's wakeup comes through trio's wakeup socket: let it arrive.
                while not got:
                    await trio.testing.wait_all_tasks_blocked()
                    if sent not in heeded():
                        break  # ignored: nothing will come
                nursery.cancel_scope.cancel()

    trio.run(main)
    return got


def test_the_receiver_takes_a_heeded_signal() -> None:
    with ignoring(signal.SIGINT):  # one ignored: the others still come
        assert received_after(signal.SIGHUP) == [signal.SIGHUP]
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # left as it was


def test_the_receiver_passes_an_ignored_signal_by() -> None:
    with ignoring(signal.SIGHUP):
        assert received_after(signal.SIGHUP) == []
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN


def test_with_every_signal_ignored_the_receiver_waits_for_ever() -> None:
    """trio refuses a receiver of no signals; the stop receiver waits instead."""
    with ignoring(*STOPPING_SIGNALS):
        assert received_after(signal.SIGTERM) == []
