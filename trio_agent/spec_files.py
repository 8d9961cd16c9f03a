"""Where ``spec/`` is: inside the installed package, or in the source checkout.

The wheel ships the repository's ``spec/`` (normative text, JSON schemas, conformance
vectors) as ``trio_agent/spec`` (pyproject.toml maps it), so ``trio-agent conform`` finds its
vectors after ``pip install trio-agent`` anywhere. This module reads it through
:mod:`importlib.resources`; in a source checkout (an editable install) the package directory
has no ``spec`` beside its modules and the checkout's ``spec/`` is used instead: the same
files, one copy. Both are plain directories on disk.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SpecMissing", "spec_root"]


class SpecMissing(LookupError):
    """Neither the installed package nor a source checkout holds ``spec/``."""


def spec_root() -> Path:
    """The directory holding spec/README.md, spec/vectors/ and spec/schema/."""
    # Imported here, not at the top: it costs about 4 ms, and every command's start imports
    # this module (conform's options are part of the parser) while only conform reads spec/.
    import importlib.resources

    packaged = importlib.resources.files("trio_agent") / "spec"
    if isinstance(packaged, Path) and (packaged / "vectors").is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[1] / "spec"
    if (checkout / "vectors").is_dir():
        return checkout
    raise SpecMissing(
        f"the spec files are missing: neither {packaged} nor {checkout} holds vectors/ "
        "(reinstall trio-agent from a wheel or a full checkout)"
    )
