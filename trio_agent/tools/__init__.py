"""Tools: the protocol (:mod:`.base`), process groups (:mod:`.procgroup`, spec/tools.md) and
the subprocess tools built on them (:mod:`.subprocess_tool`)."""

from .subprocess_tool import BadArguments, BashTool, SubprocessTool

__all__ = ["BadArguments", "BashTool", "SubprocessTool"]
