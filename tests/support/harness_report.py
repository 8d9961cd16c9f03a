"""Prints the harness figures of the session: the seed, and per profile the examples run and
the crash and cancel points covered (the lead collects these for CI)."""

from __future__ import annotations

from typing import Any

from harness_settings import SEED
from planted import FOUND

from trio_agent.testing.machine import COVERAGE, EXAMPLES
from trio_agent.testing.protocol import POINTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not EXAMPLES:
        return
    tr = terminalreporter
    tr.section("trio_agent harness")
    tr.write_line(f"seed {SEED} (reproduce: TRIO_AGENT_HARNESS_SEED={SEED})")
    for profile, count in sorted(EXAMPLES.items()):
        labels = {label for (p, label) in COVERAGE if p == profile}
        parts = []
        for action in ("crash", "cancel"):
            named = sorted(p for p in POINTS if f"{action}@{p}" in labels)
            other = sorted(
                label.split("@", 1)[1]
                for label in labels
                if label.startswith(action + "@") and label.split("@", 1)[1] not in POINTS
            )
            parts.append(
                f"{action}: {len(named)}/{len(POINTS)} named points"
                + (f" (+ parked at {', '.join(other)})" if other else "")
            )
        tr.write_line(f"{profile}: {count} examples; " + "; ".join(parts))
        if not profile.startswith("planted"):
            for action in ("crash", "cancel"):
                counts = sorted(
                    (label.split("@", 1)[1], n)
                    for (p, label), n in COVERAGE.items()
                    if p == profile and label.startswith(action + "@")
                )
                tr.write_line(f"    {action}: " + ", ".join(f"{w} {n}" for w, n in counts))
        missing = [
            f"{action}@{p}"
            for action in ("crash", "cancel")
            for p in POINTS
            if f"{action}@{p}" not in labels
        ]
        if missing and not profile.startswith("planted"):
            tr.write_line(f"    not reached: {', '.join(missing)}")
    for name, rules in FOUND.items():
        tr.write_line(f"planted bug {name}: shrunk to {len(rules)} rules: {' ; '.join(rules)}")
