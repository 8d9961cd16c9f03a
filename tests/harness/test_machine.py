"""The state machine against the real runtime and the real JSONL store, in process.

``make test`` runs a fixed budget (``TRIO_AGENT_HARNESS_EXAMPLES``, default 200); ``make
fuzz`` runs the long one (``TRIO_AGENT_FUZZ_EXAMPLES``, at least 10,000). The seed is printed
at the end of the session; ``TRIO_AGENT_HARNESS_SEED`` reproduces a run.
"""

from __future__ import annotations

import pytest
from support.harness_settings import EXAMPLES, FUZZ_EXAMPLES, run_machine

from trio_agent.testing.inprocess import InProcessAdapter
from trio_agent.testing.machine import (
    RULE_NAMES,
    RULE_SCENARIOS,
    RULES,
    machine_for,
    run_scenarios,
)


@pytest.mark.slow  # long: make test-fast leaves it out
def test_the_runtime_keeps_its_promises_under_the_machine() -> None:
    """The default run, which also has to exercise every rule it checks: a rule no example
    gave a check something to decide was not tested, and that is the harness's failure."""
    machine = machine_for(InProcessAdapter, profile="in-process")
    run_machine(machine, examples=EXAMPLES, steps=30)
    never = [name for name in RULE_NAMES if not RULES[("in-process", name)]]
    assert not never, f"the default run never exercised: {never}"


@pytest.mark.slow
@pytest.mark.skipif(FUZZ_EXAMPLES == 0, reason="set TRIO_AGENT_FUZZ_EXAMPLES (make fuzz)")
def test_the_runtime_keeps_its_promises_under_a_long_budget() -> None:
    machine = machine_for(InProcessAdapter, profile="fuzz")
    run_machine(machine, examples=FUZZ_EXAMPLES, steps=40)


def test_a_flush_in_flight_acknowledges_only_what_was_appended_before_it() -> None:
    """Found by the machine: a flush requested while a held cancel's turn still has to
    unwind (its step/end and turn/end are appended during the flush, whose batch the disk
    refuses) must not acknowledge those two events."""
    machine = machine_for(InProcessAdapter, profile="regressions")()
    try:
        machine.begin(plan=["talk"])
        machine.followup()
        machine.flush()
        machine.disk_full(fail=1)
        machine.cancel_unsettled(cause="user", keep_inbox=False)
        machine.flush()
        machine.advance(ticks=2)
    finally:
        machine.teardown()


def test_drive_leaves_an_approval_asked_while_it_drives_to_the_next_rule() -> None:
    """``drive`` answers only the approvals that were waiting when it began: one asked while
    it drives waits for the next rule, so that a cancel can meet it (K11)."""
    machine = machine_for(InProcessAdapter, profile="drive")()
    try:
        machine.begin(plan=["ask", "talk"])
        machine.followup()
        machine.drive(ticks=20, finish=True)
        assert machine.state is not None
        assert (machine.state["status"], machine.state["approvals"]) == ("running", 1)
        machine.cancel(cause="user", keep_inbox=False)
        assert machine.model.exercised["K11 an unanswered approval ends cancelled"] == 1
    finally:
        machine.teardown()


def test_the_rule_scenarios_exercise_every_rule() -> None:
    """Every run plays them first, so every rule is exercised whatever the seed and the
    budget; each scenario also passes every check on the real runtime."""
    machine = machine_for(InProcessAdapter, profile="rule scenarios")
    run_scenarios(machine)
    never = [name for name in RULE_NAMES if not RULES[("rule scenarios", name)]]
    assert not never, f"no rule scenario exercises: {never}"
    titled = " ".join(title for title, _ in RULE_SCENARIOS)
    untitled = {n.split(" ", 1)[0] for n in RULE_NAMES} - set(
        titled.replace(",", " ").replace(":", " ").split()
    )
    assert not untitled, f"a scenario exercises these rules but no title names them: {untitled}"
