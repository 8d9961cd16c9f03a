"""The public contract: these names exist at the top level, and no module imports a layer it
may not (the layer table in the package docstring, ``trio_agent/__init__.py``; the log core
never imports trio and does no I/O).

import-linter holds every layer to the table (``.importlinter``, generated from the table
and held to it here); this module's own import scanner checks what import-linter cannot
express: the package module and the names imported from it, the lazy exports, a module the
table does not name, and import circles."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from importlib.util import resolve_name
from pathlib import Path

import pytest

import trio_agent

PACKAGE = Path(trio_agent.__file__).parent


def cli_modules() -> set[str]:
    """The command line's top-level modules, as the package docstring names them."""
    doc = trio_agent.__doc__ or ""
    listed = re.search(r"the command line \(([^)]*)\)", doc)
    assert listed is not None, "the package docstring names the command line's modules"
    return set(re.findall(r"``(\w+)``", listed.group(1)))


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


def layer_of(module: str, root: Path = PACKAGE) -> str:
    """``trio_agent.store.jsonl`` -> ``store``; a top-level module the table names
    (``cancel``, ``boundary``) -> itself; a top-level command-line module -> ``cli``; the
    package itself (or a name imported from it) -> ``package``. Any other subpackage or
    top-level module is a layer of its own name, which the table must then name."""
    parts = module.split(".")
    assert parts[0] == "trio_agent", module
    if len(parts) == 1:
        return "package"
    head = parts[1]
    if head in cli_modules():
        return "cli"
    if (root / head).is_dir() or (root / f"{head}.py").is_file():
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
            # ``from . import x``, ``from trio_agent import x``: x is a module of that
            # package (a layer of its own when the package is trio_agent), or a name it defines.
            names = (
                [f"{target}.{alias.name}" for alias in node.names]
                if not node.module or target == "trio_agent"
                else [target]
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
    allowed = table.get(layer, set())  # a layer the table does not name may import nothing
    found = []
    for target in imported_modules(source, module, is_package):
        to = layer_of(target)
        if to == layer or allowed is None:
            continue
        if to not in allowed:
            found.append(f"{module} ({layer}) imports {target} ({to})")
    return found


def export_violations(exports: Mapping[str, str]) -> list[str]:
    """The package's lazy exports (``_EXPORTS``: name -> the module ``__getattr__`` imports it
    from) that the layer table does not allow the package to import."""
    allowed = layer_table()["package"] or set()
    found = []
    for name, relative in sorted(exports.items()):
        target = resolve_name(relative, "trio_agent")
        to = layer_of(target)
        if to != "package" and to not in allowed:
            found.append(f"trio_agent (package) exports {name} from {target} ({to})")
    return found


def _modules(root: Path = PACKAGE) -> Iterator[tuple[Path, str, bool]]:
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
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


def unnamed_layers(root: Path = PACKAGE) -> set[str]:
    """The layers of the modules under ``root`` that the layer table does not name."""
    return {layer_of(module, root) for _path, module, _pkg in _modules(root)} - set(layer_table())


def test_the_layer_table_names_every_layer() -> None:
    table = layer_table()
    assert not unnamed_layers(), f"layers missing from the table: {unnamed_layers()}"
    for allowed in table.values():
        assert allowed is None or allowed <= set(table)


def test_the_package_layer_imports_and_is_imported_only_as_the_table_allows() -> None:
    """The edges import-linter cannot see (its contracts, in ``.importlinter``, hold every
    other layer to the table): those of ``trio_agent/__init__.py`` itself, and the names a
    layer imports from it (``from .. import __version__``)."""
    violations = [
        v
        for path, module, is_package in _modules()
        for v in layer_violations(path.read_text(), module, is_package)
        if "(package)" in v
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
    from trio_agent import demo  # up, absolute, named from the package: demo


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
        "trio_agent.store.bad (store) imports trio_agent.demo (demo)",
        "trio_agent.store.bad (store) imports trio_agent.runtime (runtime)",
        "trio_agent.store.bad (store) imports trio_agent.testing.world (testing)",
        "trio_agent.store.bad (store) imports trio_agent.tools (tools)",
    ]
    good = "from ..log import Event\nfrom . import fileops\n"
    assert layer_violations(good, "trio_agent.store.good") == []


def test_the_package_may_not_import_a_layer_above_it() -> None:
    """The package's own module, importing a layer by name from itself, either spelling."""
    for source in ("from trio_agent import testing\n", "from . import testing\n"):
        assert layer_violations(source, "trio_agent", is_package=True) == [
            "trio_agent (package) imports trio_agent.testing (testing)"
        ]
    assert layer_violations("from trio_agent import __version__\n", "trio_agent", True) == []


def test_a_module_outside_the_table_is_a_layer_the_table_misses(tmp_path: Path) -> None:
    """A new top-level module is not silently the package: the table must name its layer."""
    root = tmp_path / "trio_agent"
    root.mkdir()
    for name in ("__init__.py", "cancel.py", "cli.py", "util.py"):
        (root / name).write_text("")
    assert layer_of("trio_agent.util", root) == "util"
    assert unnamed_layers(root) == {"util"}


def test_a_bottom_module_may_import_no_layer() -> None:
    assert layer_of("trio_agent.boundary") == "boundary"
    assert layer_violations("from .log import Event\n", "trio_agent.boundary") == [
        "trio_agent.boundary (boundary) imports trio_agent.log (log)"
    ]
    assert layer_violations("from ..boundary import errors\n", "trio_agent.models.x") == []


def test_the_lazy_exports_import_only_what_the_table_allows() -> None:
    """``__getattr__`` imports by name from ``_EXPORTS``: those are edges of the package too."""
    assert not export_violations(trio_agent._EXPORTS)
    bad = {"Agent": ".runtime", "Engine": ".demo.engine", "world": ".testing.world"}
    assert export_violations(bad) == [
        "trio_agent (package) exports Engine from trio_agent.demo.engine (demo)",
        "trio_agent (package) exports world from trio_agent.testing.world (testing)",
    ]


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


# -- no import circle anywhere in the package --------------------------------------------------


def _as_module(name: str, known: set[str]) -> str:
    """``trio_agent.log.Event`` -> ``trio_agent.log``: the longest prefix that is a module."""
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (every import, as the layer check counts
    them; a name imported from a module is an edge to that module)."""
    found = list(_modules(root))
    known = {module for _, module, _ in found}
    graph: dict[str, set[str]] = {}
    for path, module, is_package in found:
        source = path.read_text(encoding="utf-8")
        targets = {_as_module(t, known) for t in imported_modules(source, module, is_package)}
        graph[module] = {t for t in targets if t in known and t != module}
    return graph


def import_circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_no_module_of_the_package_is_in_an_import_circle() -> None:
    """A circle means two modules that cannot be read, or changed, one without the other."""
    assert import_circles(import_graph()) == []


def test_the_circle_check_finds_a_circle(tmp_path: Path) -> None:
    """The check can fail: two modules that import each other (one of them inside a
    function, as a circle is usually hidden) are found, and a third beside them is not."""
    root = tmp_path / "trio_agent"
    (root / "cli").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "cli" / "__init__.py").write_text("from .errors import CliError\n")
    (root / "cli" / "errors.py").write_text("def f():\n    from . import repair\n")
    (root / "cli" / "repair.py").write_text("from .errors import x\n")
    assert import_circles(import_graph(root)) == [
        ["trio_agent.cli.errors", "trio_agent.cli.repair"]
    ]


# -- the same table, as import-linter contracts --------------------------------------------------

#: The layers import-linter checks: every layer with modules of its own (``package`` is this
#: module's lazy table, checked above; ``cli`` may import anything).
IMPORTLINTER = Path(__file__).resolve().parent.parent / ".importlinter"


def importlinter_config() -> str:
    """``.importlinter``: one ``forbidden`` contract per layer of the package docstring's
    table, forbidding the direct imports of every layer the table does not allow it (the
    command line, which may import anything, included)."""
    table = layer_table()
    layers = sorted(layer for layer in table if layer != "package")
    out = [
        "# Generated from the layer table in trio_agent/__init__.py by tests/test_exports.py",
        "# (importlinter_config); a test holds this file to the table. Run: lint-imports",
        "[importlinter]",
        "root_package = trio_agent",
        "include_external_packages = False",
        "",
    ]
    for layer in layers:
        allowed = table[layer]
        if allowed is None:
            continue
        forbidden = [other for other in layers if other != layer and other not in allowed]
        out += [
            f"[importlinter:contract:{layer}]",
            f"name = {layer} imports only: {' '.join(sorted(allowed)) or 'nothing of the package'}",
            "type = forbidden",
            # The table is about what a layer's own modules import; a chain through a layer it
            # may import is that layer's business.
            "allow_indirect_imports = True",
            f"source_modules = trio_agent.{layer}",
            "forbidden_modules =",
            *(f"    trio_agent.{other}" for other in forbidden),
            "",
        ]
    return "\n".join(out)


def test_the_importlinter_contracts_are_the_layer_table() -> None:
    # To regenerate: write importlinter_config() into .importlinter.
    assert IMPORTLINTER.read_text(encoding="utf-8") == importlinter_config()


def _lint_imports(cwd: Path, pythonpath: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` as ``make lint`` runs it: the contracts in ``cwd/.importlinter``,
    found by the tool itself (its ``--config`` option is deprecated and says so)."""
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(lint), "--no-cache"],
        cwd=cwd, env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_import_linter_keeps_every_contract() -> None:
    root = IMPORTLINTER.parent
    done = _lint_imports(root, str(root))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "0 broken" in done.stdout
    assert "Warning" not in done.stderr, done.stderr  # make lint's output stays clean


def test_import_linter_finds_a_forbidden_import(tmp_path: Path) -> None:
    """The tool can fail: a tiny package whose ``low`` imports ``high``, against a contract
    forbidding it, is reported with the line."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("")
    (package / "low.py").write_text("def f() -> None:\n    from . import high\n")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = pkg\n\n[importlinter:contract:low]\nname = low\n"
        "type = forbidden\nallow_indirect_imports = True\nsource_modules = pkg.low\n"
        "forbidden_modules = pkg.high\n"
    )
    done = _lint_imports(tmp_path, str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg.low is not allowed to import pkg.high" in done.stdout
