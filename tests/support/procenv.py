"""The environment a test's child process runs with: ours, with this checkout first on
``PYTHONPATH`` so that ``python -m trio_agent`` or a test script imports the code under test."""

from __future__ import annotations

import os
from pathlib import Path

#: The repository root (the folder holding ``trio_agent/`` and ``tests/``).
REPO = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    """A copy of ``os.environ`` with :data:`REPO` prepended to ``PYTHONPATH``, then ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env
