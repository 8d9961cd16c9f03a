"""A pytest plugin (loaded by ``tests/conftest.py``) that prints the harness figures of the
session: the seed, and per profile the examples run and the crash and cancel points covered
(the lead collects these for CI), and the shrunk counterexample of each planted bug.

Under pytest-xdist (``make test`` runs the suite on several workers) each worker counts its
own examples; it hands its counts to the controller at its end (``workeroutput``), and the
controller adds them up before it prints the figures. It lives here, not in a conftest of
``tests/harness``, because the xdist controller collects nothing and so never loads one."""

from __future__ import annotations

from typing import Any

import pytest

from support.harness_settings import SEED
from trio_agent.testing.machine import COVERAGE, EXAMPLES, RULE_NAMES, RULES, TRAP_KINDS
from trio_agent.testing.protocol import POINTS, trap_points

#: bug name -> the rules of the shrunk counterexample the machine found
#: (tests/support/harness/planted.py).
FOUND: dict[str, list[str]] = {}
#: Names of the planted bugs whose search ran this session, found or not.
SEARCHED: list[str] = []


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand this worker's figures to the controller."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["harness"] = {
            "examples": sorted(EXAMPLES.items()),
            "coverage": sorted([p, label, n] for (p, label), n in COVERAGE.items()),
            "rules": sorted([p, name, n] for (p, name), n in RULES.items()),
            "found": sorted(FOUND.items()),
            "searched": list(SEARCHED),
        }


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """On the xdist controller: add a finished worker's figures to this process's."""
    got = getattr(node, "workeroutput", {}).get("harness")
    if got is None:
        return
    for profile, count in got["examples"]:
        EXAMPLES[profile] += count
    for profile, label, count in got["coverage"]:
        COVERAGE[(profile, label)] += count
    for profile, name, count in got["rules"]:
        RULES[(profile, name)] += count
    for name, rules in got["found"]:
        FOUND[name] = list(rules)
    SEARCHED.extend(got.get("searched", ()))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not EXAMPLES:
        return
    tr = terminalreporter
    tr.section("trio_agent harness")
    tr.write_line(f"seed {SEED} (reproduce: TRIO_AGENT_HARNESS_SEED={SEED})")
    for profile, count in sorted(EXAMPLES.items()):
        labels = {label for (p, label) in COVERAGE if p == profile}
        parts = []
        for action in TRAP_KINDS:
            named = sorted(p for p in trap_points(action) if f"{action}@{p}" in labels)
            other = sorted(
                label.split("@", 1)[1]
                for label in labels
                if label.startswith(action + "@") and label.split("@", 1)[1] not in POINTS
            )
            parts.append(
                f"{action}: {len(named)}/{len(trap_points(action))} named points"
                + (f" (+ parked at {', '.join(other)})" if other else "")
            )
        tr.write_line(f"{profile}: {count} examples; " + "; ".join(parts))
        if not profile.startswith("planted"):
            for action in TRAP_KINDS:
                counts = sorted(
                    (label.split("@", 1)[1], n)
                    for (p, label), n in COVERAGE.items()
                    if p == profile and label.startswith(action + "@")
                )
                tr.write_line(f"    {action}: " + ", ".join(f"{w} {n}" for w, n in counts))
        missing = [
            f"{action}@{p}"
            for action in TRAP_KINDS
            for p in trap_points(action)
            if f"{action}@{p}" not in labels
        ]
        if missing and not profile.startswith("planted"):
            tr.write_line(f"    not reached: {', '.join(missing)}")
        if not profile.startswith("planted"):
            checks = {name: n for (p, name), n in RULES.items() if p == profile}
            tr.write_line(
                f"    rules exercised: {sum(1 for n in RULE_NAMES if checks.get(n))}/"
                f"{len(RULE_NAMES)}; least: "
                + ", ".join(
                    f"{n.split(' ', 1)[0]} {checks.get(n, 0)}"
                    for n in sorted(RULE_NAMES, key=lambda n: checks.get(n, 0))[:5]
                )
            )
    for name, rules in FOUND.items():
        tr.write_line(f"planted bug {name}: shrunk to {len(rules)} rules: {' ; '.join(rules)}")
    if SEARCHED:
        missed = [name for name in SEARCHED if name not in FOUND]
        tr.write_line(
            f"planted bugs: found {len(SEARCHED) - len(missed)} of {len(SEARCHED)} searched"
            + (f"; missed: {', '.join(missed)}" if missed else "")
        )
