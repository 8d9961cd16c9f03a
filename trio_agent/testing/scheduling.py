"""FIFO scheduling for the harness's trio loops (replay must give the same interleaving).

trio randomizes the order of each batch of runnable tasks with a module-level
``random.Random`` (``trio._core._run._r``): reversed with probability 1/2, or shuffled when
Hypothesis made scheduling "deterministic" by seeding that generator per test case. Either way
the order of a batch depends on how many draws earlier batches consumed. In the harness some
batches depend on real time -- when a worker thread reports back, a waiting harness task may
or may not share its batch -- so a seeded shuffle still drifts between two runs of the same
example, and Hypothesis reports the run as flaky.

Hypothesis's "deterministic" mode is not enough either: it sorts each batch by task creation
order, so two tasks run in one order when they share a batch and in the other when a thread's
report splits them into two.

While a harness loop runs, :func:`fifo_scheduling` turns that mode off and swaps in a
generator that never reorders: every task runs in the order it became runnable, whatever the
batch boundaries, so the same requests always give the same interleaving. This touches two
private trio globals (as pytest-trio and trio's own Hypothesis plugin do); if trio renames
them, scheduling simply stays random and only reproducibility suffers.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator, MutableSequence
from contextlib import contextmanager
from typing import Any

__all__ = ["fifo_scheduling"]

_lock = threading.Lock()
_depth = 0
_saved: tuple[Any, Any] | None = None


class _NeverReorder(random.Random):
    """``random()`` is never below 1/2 (so trio never reverses a batch) and ``shuffle``
    keeps the order; everything else is an ordinary generator."""

    def random(self) -> float:
        return 0.75

    def shuffle(self, x: MutableSequence[Any], *args: Any, **kwargs: Any) -> None:
        return None


@contextmanager
def fifo_scheduling() -> Iterator[None]:
    """Make trio's scheduler FIFO for the duration (re-entrant; process-wide)."""
    global _depth, _saved
    core = sys.modules.get("trio._core._run")
    namespace = vars(core) if core is not None else {}
    flag = "_ALLOW_DETERMINISTIC_SCHEDULING"
    with _lock:
        if _depth == 0 and "_r" in namespace and flag in namespace:
            _saved = (namespace["_r"], namespace[flag])
            namespace["_r"] = _NeverReorder(0)
            namespace[flag] = True
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                namespace["_r"], namespace[flag] = _saved
                _saved = None
