"""The terms docs/glossary.md must define: the words the README, the demo page and the spec
use without explaining them inline. The README test and the demo page test both read this."""

from __future__ import annotations

from pathlib import Path

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"

TERMS = (
    "Turn",
    "Step",
    "Controller",
    "Cancel scope",
    "Nursery",
    "Aborted",
    "Interrupted",
    "Orphan",
    "Live",
    "Cold",
    "Crashed",
    "Fold",
    "Worker",
    "Driver",
    "Splice",
    "Claim",
    "next-turn / next-step",
    "Cold open",
    "Checkpoint",
    "Dispatch marker",
    "Placeholder",
    "Tick",
    "DSH",
)
