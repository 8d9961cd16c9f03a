"""What the wheel holds (pyproject.toml): every package of ``trio_agent/``, and ``spec/`` as
``trio_agent/spec`` found through :func:`~trio_agent.spec_files.spec_root`.

scripts/check-wheel.sh (``make check-wheel``, part of ``make test``) builds the real wheel and
runs the commands from a fresh venv; these are the quick checks of the same configuration.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from support.markdown import link_targets

from trio_agent.spec_files import spec_root

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]


def test_every_package_is_listed_and_spec_is_mapped() -> None:
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "trio_agent").rglob("*.py")
    }
    found = {name for name in found if (ROOT / name.replace(".", "/") / "__init__.py").exists()}
    listed = set(CONFIG["packages"])
    assert found <= listed, f"missing from pyproject.toml's packages: {sorted(found - listed)}"
    assert CONFIG["package-dir"] == {"trio_agent.spec": "spec"}
    assert listed - found == {"trio_agent.spec"}


def test_the_package_data_covers_every_spec_file_a_command_reads() -> None:
    import fnmatch

    globs = CONFIG["package-data"]["trio_agent.spec"]
    spec = ROOT / "spec"
    wanted = [
        p.relative_to(spec).as_posix()
        for p in spec.rglob("*")
        if p.is_file() and p.suffix in (".md", ".json")
    ]

    # fnmatch's * crosses "/", so match part by part as setuptools's globs do.
    def covered(rel: str) -> bool:
        parts = rel.split("/")
        return any(
            len(g.split("/")) == len(parts)
            and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, g.split("/"), strict=True))
            for g in globs
        )

    missed = [rel for rel in wanted if not covered(rel)]
    assert wanted and not missed, missed


def test_spec_root_is_the_checkouts_spec_in_a_checkout() -> None:
    assert spec_root() == ROOT / "spec"


def test_dev_only_code_is_not_in_the_package() -> None:
    assert not (ROOT / "trio_agent" / "demo" / "cdp.py").exists()
    assert not (ROOT / "trio_agent" / "testing" / "pgcluster.py").exists()


def dead_links(text: str, folder: Path, shipped: set[Path]) -> list[str]:
    """The relative links of Markdown ``text`` (a file in ``folder``) whose target is not
    among ``shipped`` (a web address or an anchor within the page is not checked)."""
    return [t for t in link_targets(text) if (folder / t).resolve() not in shipped]


def test_every_link_of_the_shipped_spec_leads_to_a_shipped_file() -> None:
    """The wheel ships spec/ alone, as ``trio_agent/spec``: a porter who reads it there
    (``pip install``, no checkout) must find every file it links to beside it. A link to the
    tutorial (``../docs/tutorial.md``) led nowhere in the wheel."""
    spec = (ROOT / "spec").resolve()
    files = {p.resolve() for g in CONFIG["package-data"]["trio_agent.spec"] for p in spec.glob(g)}
    # A link may name a folder the wheel holds (``schema/``).
    shipped = files | {d for f in files for d in f.parents if d.is_relative_to(spec)}
    pages = sorted(p for p in files if p.suffix == ".md")
    assert pages
    dead = {p.name: dead_links(p.read_text("utf-8"), p.parent, shipped) for p in pages}
    assert not {name: links for name, links in dead.items() if links}, dead
    # The check can fail: the old pointer to the tutorial, and a vector that is not there.
    old = "Read [docs/tutorial.md](../docs/tutorial.md) first; see [v](vectors/x.json)."
    assert dead_links(old, spec, shipped) == ["../docs/tutorial.md", "vectors/x.json"]
