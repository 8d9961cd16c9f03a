"""Budgets and the seed of the harness tests (environment variables, documented in
spec/harness.md §Running).

``TRIO_AGENT_HARNESS_SEED``      reproduce a run: the seed printed at the end of the session
``TRIO_AGENT_HARNESS_EXAMPLES``  examples of the in-process machine in ``make test``
``TRIO_AGENT_PIPE_EXAMPLES``     examples driven through the subprocess adapter
``TRIO_AGENT_FUZZ_EXAMPLES``     the long budget of ``make fuzz`` (the slow test runs only then)
"""

from __future__ import annotations

import contextlib
import math
import os
import random
from collections.abc import Iterator
from typing import Final

import hypothesis.internal.conjecture.engine as hypothesis_engine
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test

from trio_agent.testing.machine import HarnessMachine, machine_settings


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


SEED: Final = _int("TRIO_AGENT_HARNESS_SEED", random.SystemRandom().randrange(1 << 32))
EXAMPLES: Final = _int("TRIO_AGENT_HARNESS_EXAMPLES", 200)
PIPE_EXAMPLES: Final = _int("TRIO_AGENT_PIPE_EXAMPLES", 12)
FUZZ_EXAMPLES: Final = _int("TRIO_AGENT_FUZZ_EXAMPLES", 0)

#: Seeds of the planted-bug tests: fixed, so each takes a predictable time (any seed finds
#: every bug; TRIO_AGENT_HARNESS_SEED overrides them to check that).
PLANTED_SEED: Final = _int("TRIO_AGENT_HARNESS_SEED", 20261202)


@contextlib.contextmanager
def _shrinking_bounded_by_work() -> Iterator[None]:
    """Lift Hypothesis's wall-clock shrink limit (``MAX_SHRINKING_SECONDS``, default 300 s)
    for the block: on a slow or loaded machine it stops the shrinker early and leaves
    redundant rules. Without it every shrink phase runs to its end, which Hypothesis bounds
    by work (its cap on successful shrinks). If an upgrade renames the limit this raises
    instead of silently shrinking under a clock again."""
    previous = hypothesis_engine.MAX_SHRINKING_SECONDS  # AttributeError if renamed
    hypothesis_engine.MAX_SHRINKING_SECONDS = math.inf  # type: ignore[assignment]
    try:
        yield
    finally:
        hypothesis_engine.MAX_SHRINKING_SECONDS = previous


def run_machine(
    machine: type[HarnessMachine], *, examples: int, steps: int, seed: int = SEED
) -> None:
    """Run ``machine`` under Hypothesis with a fixed budget and seed (no example database:
    every run is reproducible from the seed alone), no deadline and no wall-clock limit on
    shrinking: every bound is on work, none on time."""
    hypothesis_seed(seed)(machine)
    with _shrinking_bounded_by_work():
        run_state_machine_as_test(
            machine,
            settings=machine_settings(examples=examples, steps=steps),
        )
