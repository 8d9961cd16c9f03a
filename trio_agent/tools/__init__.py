"""Tools: the protocol (:mod:`.base`), process groups (:mod:`.procgroup`, spec/tools.md) and
the subprocess tools built on them (:mod:`.subprocess_tool`); :func:`reap_orphans` is the
orphan reaper whoever opens a store passes it (spec/persistence.md §5)."""

from .procgroup import reap_orphans
from .subprocess_tool import BadArguments, BashTool, SubprocessTool

__all__ = ["BadArguments", "BashTool", "SubprocessTool", "reap_orphans"]
