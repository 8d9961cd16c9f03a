"""A tool call's processes as the kernel sees them: the ``/proc`` census (:mod:`.census`),
kernel containment (:mod:`.containment`), termination (:mod:`.terminate`, and
:mod:`.group_kill` for callers without trio) and cold recovery's look for orphans
(:mod:`.orphans`); spec/tools.md. Below both the store, which reaps on every
cold open, and the tools, which spawn and stop.

``reap_orphans`` is loaded on first use: the census is pure ``/proc`` reading, and a caller
that needs only it (the file commands, through the harness's pipe) must not import trio."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .orphans import reap_orphans

__all__ = ["reap_orphans"]


def __getattr__(name: str) -> Any:
    if name == "reap_orphans":
        from .orphans import reap_orphans

        return reap_orphans
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
