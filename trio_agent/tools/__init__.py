"""Tools: the protocol (:mod:`.base`), running one call's command contained
(:mod:`.run_group`, spec/tools.md) and the subprocess tools built on it
(:mod:`.subprocess_tool`); in-process tools in :mod:`.builtin`. The process mechanics (census,
containment, termination, orphans) are :mod:`trio_agent.procs`."""

from .run_group import ProcessOptions
from .subprocess_tool import BadArguments, BashTool, SubprocessTool

__all__ = ["BadArguments", "BashTool", "ProcessOptions", "SubprocessTool"]
