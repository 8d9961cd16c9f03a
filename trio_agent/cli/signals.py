"""SIGTERM and SIGHUP as a Ctrl-C, for the commands that run a port's processes without trio
(``conform`` and ``harness``: :class:`~trio_agent.cli.program.ProgramCommand`), unless the
command was started with them ignored (:mod:`trio_agent.stop_signals`).

Those processes run in sessions of their own, where neither the terminal's signals nor a
SIGTERM sent to us reach them: a command ended by the signal's default action would leave
them running. Raising :class:`Terminated` (a ``KeyboardInterrupt``) in the main thread sends
the command down the path its Ctrl-C takes, which kills every running port process's group;
the top then exits 128 + the signal's number (spec/cli.md §trio-agent's own codes). ``run``
takes the same signals through trio (:func:`~trio_agent.stop_signals.stop_receiver`) instead.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Final

from ..stop_signals import STOPPING_SIGNALS, heeded

__all__ = ["Terminated", "terminated_as_interrupt"]

#: The stopping signals but Ctrl-C, which Python turns into a ``KeyboardInterrupt`` itself.
_TERMINATING: Final = tuple(each for each in STOPPING_SIGNALS if each != signal.SIGINT)


class Terminated(KeyboardInterrupt):
    """A stopping signal arrived; ``signum`` says which (the exit code is 128 + it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """Within the block, the first SIGTERM or SIGHUP raises :class:`Terminated` in the main
    thread, and later ones are ignored, so that the cleanup it starts (bounded: SIGKILL, then
    the kernel's word that the processes exited) is not cut short. One the command was
    started with ignored stays ignored (``nohup``). Outside the main thread, where no handler
    can be set, nothing changes. The handlers before are restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        for each in taken:
            signal.signal(each, signal.SIG_IGN)
        raise Terminated(signum)

    taken = heeded(_TERMINATING)
    previous = {each: signal.signal(each, stop) for each in taken}
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)
