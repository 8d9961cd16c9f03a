"""Every machine run shrinks with no wall-clock limit: the tests' and ``trio-agent harness``'s.

Hypothesis stops shrinking after ``MAX_SHRINKING_SECONDS`` (a module constant of its engine,
300 s in the pinned version), which would make the minimal example printed depend on how
fast the machine is. ``shrinking_bounded_by_work`` lifts it for a run and puts it back.
"""

from __future__ import annotations

import math
import sys
from io import StringIO
from typing import ClassVar

import hypothesis.internal.conjecture.engine as hypothesis_engine
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

import trio_agent.testing.machine as machine_module
from trio_agent.cli.harness import run_harness
from trio_agent.testing.machine import run_machine, shrinking_bounded_by_work

SERVER = [sys.executable, "-m", "trio_agent.testing.adapter_server"]
PROFILE = "shrink-limit"


def limit() -> float:
    """Hypothesis's shrink limit now (read at each shrink's start, so patched at run time)."""
    return float(hypothesis_engine.MAX_SHRINKING_SECONDS)


def test_the_installed_hypothesis_bounds_shrinking_by_the_clock() -> None:
    """The limit exists under this name and is finite by default (else there is nothing to
    lift, and the context manager would fail loudly on the rename)."""
    assert math.isfinite(limit())


def test_the_limit_is_lifted_inside_and_put_back_after() -> None:
    before = limit()
    with shrinking_bounded_by_work():
        assert limit() == math.inf
    assert limit() == before
    with pytest.raises(KeyError), shrinking_bounded_by_work():
        raise KeyError("a failing run")
    assert limit() == before


class CountsToThree(RuleBasedStateMachine):
    """Fails on its third rule; records the shrink limit each rule ran under."""

    seen: ClassVar[list[float]] = []

    def __init__(self) -> None:
        super().__init__()
        self.rules_run = 0

    @rule(n=st.integers(min_value=0, max_value=100))
    def count(self, n: int) -> None:
        type(self).seen.append(limit())
        self.rules_run += 1
        assert self.rules_run < 3, n


def test_a_machine_run_shrinks_with_no_time_bound() -> None:
    before = limit()
    CountsToThree.seen.clear()
    with pytest.raises(AssertionError):
        run_machine(CountsToThree, examples=50, steps=10, seed=1)
    # The failing example, its shrinking and its final replay all ran unbounded.
    assert len(CountsToThree.seen) > 3
    assert set(CountsToThree.seen) == {math.inf}
    assert limit() == before


@pytest.mark.parametrize("shrink_limit", [None, 7.5])
def test_the_harness_command_runs_with_no_time_bound(
    monkeypatch: pytest.MonkeyPatch, shrink_limit: float | None
) -> None:
    """``trio-agent harness`` (``run_harness``) against our own adapter server: the real
    Hypothesis run is entered with the limit lifted (or set to ``--shrink-limit``), and the
    limit is back afterwards."""
    # The name machine.py imported from Hypothesis, which the run calls through the module.
    real = machine_module.run_state_machine_as_test  # type: ignore[attr-defined]
    limits: list[float] = []

    def watched(*args: object, **kwargs: object) -> None:
        limits.append(limit())
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(machine_module, "run_state_machine_as_test", watched)
    before = limit()
    out = StringIO()
    try:
        ok = run_harness(
            SERVER,
            examples=1,
            steps=3,
            seed=7,
            profile=PROFILE,
            timeout=600.0,
            out=out,
            shrink_limit=shrink_limit,
        )
    finally:  # keep this check's run out of the session's coverage summary
        del machine_module.EXAMPLES[PROFILE]
        for key in [k for k in machine_module.COVERAGE if k[0] == PROFILE]:
            del machine_module.COVERAGE[key]
        for rule_key in [k for k in machine_module.RULES if k[0] == PROFILE]:
            del machine_module.RULES[rule_key]
    assert ok, out.getvalue()
    # No limit unless the porter asks for one (--shrink-limit): then exactly that one.
    assert limits == [math.inf if shrink_limit is None else shrink_limit]
    assert limit() == before
