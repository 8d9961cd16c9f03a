"""The public contract: these names exist at the top level and nowhere is a
layer imported from above (spec/README.md §Layers; the log core never imports trio)."""

from __future__ import annotations

import ast
from pathlib import Path

import trio_agent

PACKAGE = Path(trio_agent.__file__).parent
#: layer -> layers it may import (besides itself). demo/cli/testing sit on top of everything.
ALLOWED = {
    "log": set(),
    "store": {"log", "tools"},  # tools only lazily, for the default orphan reaper
    "tools": {"log"},
    "models": {"log", "tools"},
    "runtime": {"log", "store", "models", "tools"},
}


def test_contract_names_are_exported() -> None:
    for name in (
        "JsonlStore",
        "Session",
        "open_agent",
        "CancelCause",
        "ScriptedModel",
        "SleepTool",
        "EchoTool",
        "BashTool",
        "LogChecker",
        "repair_closers",
        "fold_consumed_work",
        "truncate_open_turn",
        "repair_file",
    ):
        assert name in trio_agent.__all__
        assert getattr(trio_agent, name) is not None


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level >= 2:  # from ..store import x
                found.add(node.module.split(".")[0])
            elif node.level == 0:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_layers_import_only_downwards() -> None:
    for layer, allowed in ALLOWED.items():
        for path in (PACKAGE / layer).rglob("*.py"):
            imported = _imports(path)
            upward = {m for m in imported if m in ALLOWED and m != layer and m not in allowed}
            assert not upward, f"{path.relative_to(PACKAGE)} imports {upward}"


def test_log_core_is_pure() -> None:
    for path in (PACKAGE / "log").rglob("*.py"):
        imported = _imports(path)
        forbidden = {
            m
            for m in imported
            if m.split(".")[0] in {"trio", "os", "io", "socket", "subprocess", "pathlib"}
        }
        assert not forbidden, f"{path.name} imports {forbidden}"
