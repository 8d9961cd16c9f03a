"""The public contract: these names exist at the top level, and no module imports a layer it
may not (the layer table in the package docstring, ``trio_agent/__init__.py``; the log core
never imports trio and does no I/O)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import trio_agent

PACKAGE = Path(trio_agent.__file__).parent
#: The command line: the top-level modules that are not the package itself.
CLI_MODULES = {"cli", "cli_repair", "interactive", "clijson", "conform", "dsn", "__main__"}


def layer_table() -> dict[str, set[str] | None]:
    """The layer table as the package docstring states it: layer -> the layers it may import
    (``None``: any)."""
    doc = trio_agent.__doc__ or ""
    block = doc[doc.index("The layer table.") :]
    rows = re.findall(r"^    (\w+) +(.+)$", block, flags=re.MULTILINE)
    table: dict[str, set[str] | None] = {}
    for layer, allowed in rows:
        if allowed.startswith("*"):
            table[layer] = None
        else:
            table[layer] = set() if allowed.strip() == "-" else set(allowed.split())
    return table


def layer_of(module: str) -> str:
    """``trio_agent.store.jsonl`` -> ``store``; a top-level module the table names
    (``cancel``, ``boundary``) -> itself; a top-level command-line module -> ``cli``; the
    package itself (or a name imported from it) -> ``package``."""
    parts = module.split(".")
    assert parts[0] == "trio_agent", module
    if len(parts) == 1:
        return "package"
    head = parts[1]
    if head in CLI_MODULES:
        return "cli"
    if (PACKAGE / head).is_dir() or head in layer_table():  # a subpackage or a bottom module
        return head
    return "package"  # a name defined by trio_agent/__init__.py, e.g. __version__


def imported_modules(source: str, module: str, is_package: bool = False) -> Iterator[str]:
    """Every ``trio_agent`` module ``source`` (the text of ``module``) imports: relative and
    absolute, module-level, inside functions and under ``TYPE_CHECKING`` alike."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            # ``from . import x``: x is a module of that package, or a name it defines.
            names = (
                [f"{target}.{alias.name}" for alias in node.names] if not node.module else [target]
            )
        else:
            continue
        for name in names:
            if name == "trio_agent" or name.startswith("trio_agent."):
                yield name


def layer_violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """The imports of ``module`` that the layer table does not allow, as readable edges."""
    table = layer_table()
    layer = layer_of(module)
    allowed = table[layer]
    found = []
    for target in imported_modules(source, module, is_package):
        to = layer_of(target)
        if to == layer or allowed is None:
            continue
        if to not in allowed:
            found.append(f"{module} ({layer}) imports {target} ({to})")
    return found


def _modules() -> Iterator[tuple[Path, str, bool]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        is_package = rel.name == "__init__"
        parts = rel.parts[:-1] if is_package else rel.parts
        yield path, ".".join(parts), is_package


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


def test_the_layer_table_names_every_layer() -> None:
    table = layer_table()
    layers = {layer_of(module) for _path, module, _pkg in _modules()}
    assert layers <= set(table), f"layers missing from the table: {layers - set(table)}"
    for allowed in table.values():
        assert allowed is None or allowed <= set(table)


def test_layers_import_only_what_the_table_allows() -> None:
    violations = [
        v
        for path, module, is_package in _modules()
        for v in layer_violations(path.read_text(), module, is_package)
    ]
    assert not violations, "\n".join(violations)


BAD_STORE_MODULE = """
from typing import TYPE_CHECKING

from ..log import Event  # allowed: the store sits on the log
from trio_agent.log.codec import encode_event  # allowed, absolute

if TYPE_CHECKING:
    from trio_agent.runtime import Agent  # up: runtime


def reap() -> None:
    from ..tools import procgroup  # up, lazily: tools
    import trio_agent.testing.world  # up, absolute: testing


def version() -> str:
    from .. import __version__  # the package's own names are above the store too
    from . import fileops  # its own layer: allowed
    return __version__
"""


@pytest.mark.parametrize("written", [False, True])
def test_the_layer_check_fails_on_a_bad_module(tmp_path: Path, written: bool) -> None:
    """A deliberately bad module: every edge up is reported, however it is spelled."""
    source = BAD_STORE_MODULE
    if written:  # read back from a file, as the real check reads the package
        path = tmp_path / "bad.py"
        path.write_text(source)
        source = path.read_text()
    found = layer_violations(source, "trio_agent.store.bad")
    assert sorted(found) == [
        "trio_agent.store.bad (store) imports trio_agent.__version__ (package)",
        "trio_agent.store.bad (store) imports trio_agent.runtime (runtime)",
        "trio_agent.store.bad (store) imports trio_agent.testing.world (testing)",
        "trio_agent.store.bad (store) imports trio_agent.tools (tools)",
    ]
    good = "from ..log import Event\nfrom . import fileops\n"
    assert layer_violations(good, "trio_agent.store.good") == []


def test_a_bottom_module_may_import_no_layer() -> None:
    assert layer_of("trio_agent.boundary") == "boundary"
    assert layer_violations("from .log import Event\n", "trio_agent.boundary") == [
        "trio_agent.boundary (boundary) imports trio_agent.log (log)"
    ]
    assert layer_violations("from ..boundary import errors\n", "trio_agent.models.x") == []


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports, as written (absolute) or resolved (relative)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_log_core_is_pure() -> None:
    for path in (PACKAGE / "log").rglob("*.py"):
        imported = _imports(path)
        forbidden = {
            m
            for m in imported
            if m.split(".")[0] in {"trio", "os", "io", "socket", "subprocess", "pathlib"}
        }
        assert not forbidden, f"{path.name} imports {forbidden}"
