"""The agent's run state on its own (spec/cancel.md K1-K8): plain calls, no trio loop."""

from __future__ import annotations

from trio_agent.cancel import CancelCause
from trio_agent.runtime.run_state import RunState


def test_a_wake_creates_the_controller_at_once_and_runs() -> None:
    state = RunState()
    assert state.status == "idle" and state.controller is None
    controller = state.start()  # K1
    assert str(state.status) == "running"  # str(): mypy narrowed it to "idle" above
    assert state.controller is controller and state.activity is controller
    assert not state.after_abort


def test_an_idle_cancel_reaches_nothing() -> None:
    state = RunState()
    assert state.cancel(CancelCause.user()) is False  # K5
    assert state.start().cancel_called is False  # nothing armed for later work


def test_first_cause_wins_and_a_cancel_before_turn_start_prevents_the_turn() -> None:
    state = RunState()
    controller = state.start()
    user = CancelCause.user()
    assert state.cancel(user) is True
    assert state.cancel(CancelCause.parent()) is False  # K3
    assert state.after_abort  # K8
    assert state.prevent(controller) is user  # K2
    assert controller.closed and state.controller is None
    assert state.activity is controller  # still answers "after an abort" until idle
    assert state.go_idle() is False
    assert state.status == "idle" and state.activity is None and not state.after_abort


def test_a_completed_turn_hands_off_to_the_next_controller() -> None:
    state = RunState()
    first = state.start()
    state.handoff(first, aborted=False)  # K7
    second = state.controller
    assert second is not None and second is not first and state.activity is second
    assert first.closed and not second.closed
    assert state.cancel(CancelCause.user()) is True and second.cancel_called
    assert not first.cancel_called  # a stale reference is harmless (K3)
    assert first.cancel(CancelCause.user()) is False


def test_an_aborted_turn_ends_the_run_but_keeps_its_activity() -> None:
    state = RunState()
    controller = state.start()
    state.cancel(CancelCause.user())
    state.handoff(controller, aborted=True)  # K7, K8: queued work parks
    assert state.controller is None and state.activity is controller
    assert state.after_abort and state.status == "running"
    assert state.cancel(CancelCause.user()) is False  # cannot reach the finished turn


def test_a_wake_after_an_abort_is_latched_and_replayed_once() -> None:
    state = RunState()
    controller = state.start()
    state.cancel(CancelCause.user())
    assert state.steer_target(state.after_abort) == "next-turn"  # K8
    state.latch_wake()
    assert state.latch
    state.handoff(controller, aborted=True)
    assert state.go_idle() is True  # replay
    assert state.take_latch() is False  # once


def test_a_wake_starts_an_idle_agent_and_is_latched_only_after_an_abort() -> None:
    state = RunState()
    assert state.wake(after_abort=False) is True  # idle: the caller starts a run (K1)
    state.start()
    assert state.wake(after_abort=state.after_abort) is False  # the run takes it (K21)
    assert not state.latch
    state.cancel(CancelCause.user())
    assert state.wake(after_abort=state.after_abort) is False  # K8: latched, not started
    assert state.latch and state.status == "running"


def test_a_disposed_cancel_never_latches() -> None:
    state = RunState()
    state.start()
    state.cancel(CancelCause.disposed())
    state.latch_wake()
    assert not state.latch


def test_a_clearing_cancel_forgets_the_latch() -> None:
    state = RunState()
    state.start()
    state.cancel(CancelCause.user())
    state.latch_wake()
    state.forget_latch()  # K5 step 1
    assert state.go_idle() is False


def test_a_steer_outside_an_abort_is_next_step() -> None:
    state = RunState()
    state.start()
    assert state.steer_target(state.after_abort) == "next-step"


def test_going_idle_closes_an_unused_next_controller() -> None:
    state = RunState()
    first = state.start()
    state.handoff(first, aborted=False)
    second = state.controller
    assert second is not None
    state.go_idle()  # K3: the next turn never came
    assert second.closed and state.controller is None
    assert second.cancel(CancelCause.user()) is False


def test_abandon_and_stop() -> None:
    state = RunState()
    controller = state.start()
    state.abandon()
    assert state.status == "idle" and state.controller is controller
    state.stop()
    assert controller.closed and state.controller is None and state.activity is None
