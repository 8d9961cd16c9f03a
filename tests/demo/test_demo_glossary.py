"""The demo page carries the glossary (the page is served from the package, docs/ is not):
its copy must be exactly what scripts/demo-glossary.py makes of docs/glossary.md."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from support.glossary import GLOSSARY, TERMS
from support.procenv import REPO

from trio_agent.demo.server import page


def generator() -> ModuleType:
    path = REPO / "scripts" / "demo-glossary.py"
    spec = importlib.util.spec_from_file_location("demo_glossary", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_glossary_is_docs_glossary() -> None:
    gen = generator()
    markdown = GLOSSARY.read_text(encoding="utf-8")
    served = page().decode()
    assert gen.current(served) == gen.block(markdown), "run scripts/demo-glossary.py"
    terms = [term for term, _ in gen.entries(markdown)]
    for word in TERMS:
        assert word in terms
    assert 'id="glossary-open"' in served  # the page's link to it


def test_inline_markdown_becomes_text_and_code() -> None:
    gen = generator()
    html = gen.inline("a `x<y` [spec](../spec/log.md) *b*")
    assert html == "a <code>x&lt;y</code> spec <em>b</em>"
    assert gen.entries("intro\n\n**Term.** one\ntwo\n\nother") == [("Term", "one two")]


def test_check_mode_reports_a_stale_copy(tmp_path: Path) -> None:
    gen = generator()
    stale = tmp_path / "index.html"
    stale.write_text(page().decode().replace("<dt>Tick</dt>", "<dt>Tock</dt>"), encoding="utf-8")
    gen.PAGE = stale  # type: ignore[attr-defined]  # the script's module, loaded by path
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
