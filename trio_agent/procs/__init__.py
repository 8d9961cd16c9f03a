"""A tool call's processes as the kernel sees them: the ``/proc`` census (:mod:`.census`),
kernel containment (:mod:`.containment`), termination (:mod:`.terminate`) and cold recovery's
look for orphans (:mod:`.orphans`); spec/tools.md. Below both the store, which reaps on every
cold open, and the tools, which spawn and stop."""

from .orphans import reap_orphans

__all__ = ["reap_orphans"]
