"""Budgets and the seed of the harness tests (environment variables, documented in
spec/harness.md §Running it).

``TRIO_AGENT_HARNESS_SEED``      the seed (printed at the end of the session); fixed unless set,
                                so ``make test`` runs the same examples every time and on
                                every xdist worker; ``make fuzz`` sets a fresh one to explore
``TRIO_AGENT_HARNESS_EXAMPLES``  examples of the in-process machine in ``make test``
``TRIO_AGENT_PIPE_EXAMPLES``     examples driven through the subprocess adapter
``TRIO_AGENT_FUZZ_EXAMPLES``     the long budget of ``make fuzz`` (the slow test runs only then)
"""

from __future__ import annotations

import os
from typing import Final

from trio_agent.testing.machine import HarnessMachine, run_machine as machine_run


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


#: The seed of ``make test`` unless ``TRIO_AGENT_HARNESS_SEED`` names another. Fixed, not drawn
#: per run: each xdist worker imports this module, and a drawn seed would differ between them.
DEFAULT_SEED: Final = 20261204
SEED: Final = _int("TRIO_AGENT_HARNESS_SEED", DEFAULT_SEED)
EXAMPLES: Final = _int("TRIO_AGENT_HARNESS_EXAMPLES", 200)
PIPE_EXAMPLES: Final = _int("TRIO_AGENT_PIPE_EXAMPLES", 12)
FUZZ_EXAMPLES: Final = _int("TRIO_AGENT_FUZZ_EXAMPLES", 0)

#: Seeds of the planted-bug tests: fixed, so each takes a predictable time (any seed finds
#: every bug; TRIO_AGENT_HARNESS_SEED overrides them to check that).
PLANTED_SEED: Final = _int("TRIO_AGENT_HARNESS_SEED", 20261202)


def run_machine(
    machine: type[HarnessMachine],
    *,
    examples: int,
    steps: int,
    seed: int = SEED,
    scenarios: bool = True,
) -> None:
    """:func:`trio_agent.testing.machine.run_machine` (the rule scenarios unless told not to,
    then a fixed budget, no example database, no deadline, no wall-clock limit on
    shrinking: every bound is on work, none on time), seeded with the session's seed unless
    told otherwise."""
    machine_run(machine, examples=examples, steps=steps, seed=seed, scenarios=scenarios)
