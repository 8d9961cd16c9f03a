"""Known bugs, planted into the real runtime and store by monkeypatching (tests only).

Each :class:`Bug` patches one seam: one small method of the write policy
(``WritePolicy.failed``), of the agent's run state (``RunState.retire``, ``steer_target``,
``take_latch``), of the controller or the scheduler, or wraps one real function (repair, the
chunk append, cancel). Only the turn's skeleton (``TurnRunner.run``, a dozen lines over
``_start_turn`` / ``_body`` / ``_end_turn``) is restated, because its bug is where the ending
runs. The planted-bug tests run the state machine against the patched code and expect it to
fail and shrink to a short counterexample.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pytest
import trio

from trio_agent.cancel import CancelCause, require_cause
from trio_agent.log import build as build_module, repair as repair_module
from trio_agent.log.events import Event
from trio_agent.models import scripted as scripted_module
from trio_agent.models.base import check_chunk
from trio_agent.runtime import (
    agent as agent_module,
    scheduler as scheduler_module,
    turn as turn_module,
)
from trio_agent.runtime.controller import TurnContext, TurnController
from trio_agent.runtime.events import InboxDropped, OutcomeKind, TurnOutcome
from trio_agent.runtime.hooks import Hooks
from trio_agent.runtime.run_state import RunState, Target
from trio_agent.store import ReentrantAppend, recovery as recovery_module
from trio_agent.store.write_policy import Batch, WritePolicy
from trio_agent.testing import world as world_module


@attrs.frozen
class Bug:
    name: str
    description: str
    plant: Callable[[pytest.MonkeyPatch], None]
    #: A regex the machine's failure message must match: it found *this* bug, not another.
    expect: str


# -- 1: turn/end written inside the cancelled scope, after an unshielded await -----------------


async def _run_writing_turn_end_in_scope(
    self: turn_module.TurnRunner,
    controller: TurnController,
    handoff: Callable[[TurnController, bool], None],
    ended: Callable[[TurnOutcome], None],
) -> None:
    """TurnRunner.run, except that turn/end is booked *inside* the turn's cancel scope after
    an unshielded await: a cancel raises at that await and turn/end is lost."""
    turn = self._start_turn(controller)
    kind: OutcomeKind | None = None
    error: dict[str, str] | None = None
    with controller.scope:
        try:
            kind = await self._body(controller, turn)
        except Exception as exc:
            error = turn_module.error_info(exc)
        finally:
            aborted = controller.cancel_called
            handoff(controller, aborted)
            await trio.lowlevel.checkpoint()  # BUG: "await the durable append", unshielded
            ending: OutcomeKind = "aborted" if aborted else kind or "error"
            self._end_turn(controller, turn, ending, error, ended)


def _plant_turn_end_in_scope(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(turn_module.TurnRunner, "run", _run_writing_turn_end_in_scope)


# -- 2: the controller reference outlives its turn ----------------------------------------------


def _retire_keeping_controller(self: RunState) -> None:
    """RunState.retire, except the run's last controller is neither closed nor dropped."""
    self.activity = None  # BUG: self.controller stays, live, past the end of its run


def _plant_stale_controller(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(RunState, "retire", _retire_keeping_controller)


# -- 3: repair closes the turn before the step -------------------------------------------------


def _plant_turn_before_step(mp: pytest.MonkeyPatch) -> None:
    real = repair_module.repair_closers

    def closers_turn_first(*args: Any, **kwargs: Any) -> list[Event]:
        closers = real(*args, **kwargs)
        if len(closers) >= 2 and closers[-2].type == "step/end":
            step_end, turn_end = closers[-2], closers[-1]
            closers[-2:] = [  # BUG: turn/end before step/end (seqs renumbered to stay contiguous)
                Event(step_end.seq, turn_end.time, turn_end.type, turn_end.data),
                Event(turn_end.seq, step_end.time, step_end.type, step_end.data),
            ]
        return closers

    mp.setattr(recovery_module, "repair_closers", closers_turn_first)


# -- 4: the writer drops a batch whose write failed ----------------------------------------------


def _failed_dropping_the_batch(self: WritePolicy, batch: Batch, error: OSError, now: float) -> None:
    """WritePolicy.failed, except the failed batch is forgotten instead of re-queued."""
    self.writing = False
    self.pending_bytes -= batch.size  # BUG: the batch is dropped, not put back in front
    self.failure = (batch.number, error)


def _plant_dropping_writer(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(WritePolicy, "failed", _failed_dropping_the_batch)


# -- 5: a cancel that also cancels the next turn -------------------------------------------------


def _plant_cancel_leaks(mp: pytest.MonkeyPatch) -> None:
    real_cancel = agent_module.Agent.cancel
    real_start_run = agent_module.Agent._start_run
    # Keyed weakly by the agent itself, not by id(): an id is reused once an agent of an
    # earlier example is collected, which would leak the cause into an unrelated example and
    # make the failure depend on memory layout (Hypothesis then reports it as flaky).
    doomed: weakref.WeakKeyDictionary[agent_module.Agent, CancelCause] = weakref.WeakKeyDictionary()

    def cancel(self: agent_module.Agent, cause: CancelCause, *, keep_inbox: bool = False) -> bool:
        hit = real_cancel(self, cause, keep_inbox=keep_inbox)
        if hit:
            doomed[self] = cause  # BUG: remembered for whatever starts next
        return hit

    def start_run(self: agent_module.Agent) -> None:
        real_start_run(self)
        cause = doomed.pop(self, None)
        controller = self._state.controller
        if cause is not None and controller is not None:
            controller.cancel(cause)

    mp.setattr(agent_module.Agent, "cancel", cancel)
    mp.setattr(agent_module.Agent, "_start_run", start_run)


# -- 6: the finish chunk is not logged -----------------------------------------------------------


def _plant_unlogged_finish(mp: pytest.MonkeyPatch) -> None:
    real = turn_module.TurnRunner._append_chunk

    def append_chunk(self: turn_module.TurnRunner, turn: int, step: int, chunk: Any) -> None:
        if chunk["type"] == "finish":
            return  # BUG: the stream ends at the finish chunk, which is never logged
        real(self, turn, step, chunk)

    mp.setattr(turn_module.TurnRunner, "_append_chunk", append_chunk)


# -- 7: no approval bracket for plain calls --------------------------------------------------


def _plant_plain_calls_unbracketed(mp: pytest.MonkeyPatch) -> None:
    real = scheduler_module.ToolStep._approve

    async def approve(self: scheduler_module.ToolStep, slot: Any, approver: Any) -> bool:
        if slot.tool is not None and slot.tool.parallel:
            # BUG: the approver decides, but approval/asked and approval/decided are not logged
            return await approver.approve(self._call(slot), self.ctx) is True
        return await real(self, slot, approver)

    mp.setattr(scheduler_module.ToolStep, "_approve", approve)


# -- 8: a steer after an abort stays in next-step -----------------------------------------------


def _steer_target_always_next_step(after_abort: bool) -> Target:
    """RunState.steer_target, except it always says next-step, also after an abort (K8)."""
    return "next-step"  # BUG: after an abort: next-turn


def _plant_steer_after_abort(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(RunState, "steer_target", staticmethod(_steer_target_always_next_step))


# -- 9: a second cancel of a cancelled controller reports a hit ----------------------------------


def _cancel_hitting_twice(self: TurnController, cause: CancelCause) -> bool:
    """TurnController.cancel, except a later call on a cancelled controller returns True."""
    require_cause(cause)
    if self._closed:
        return False
    if self._cause is not None:
        return True  # BUG: the first cause still wins, but the call claims it cancelled
    self._cause = cause
    self._scope.cancel(reason=cause.describe())
    return True


def _plant_second_cancel_hits(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(TurnController, "cancel", _cancel_hitting_twice)


# -- 10: a latched wake is forgotten ------------------------------------------------------------


def _take_latch_forgetting_it(self: RunState) -> bool:
    """RunState.take_latch, except a latched wake is dropped instead of replayed (K8)."""
    self.latch = False
    return False  # BUG: a wake sent after the abort never starts its run


def _plant_latch_forgotten(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(RunState, "take_latch", _take_latch_forgetting_it)


# -- 11: the adapter misreads keep_inbox, and journals what it understood ------------------------


def _plant_keep_inbox_misread(mp: pytest.MonkeyPatch) -> None:
    real = world_module.World.cancel

    def cancel(self: world_module.World, cause: str, keep_inbox: bool, *, where: str) -> bool:
        if where.startswith("now:"):
            keep_inbox = False  # BUG: the request's keep_inbox is never read
        return real(self, cause, keep_inbox, where=where)

    mp.setattr(world_module.World, "cancel", cancel)


# -- 12: a failed job's result is coded ABORTED ---------------------------------------------------


def _failed_as_aborted(self: scheduler_module.ToolStep, slot: Any, text: str) -> Any:
    return self._result(slot, text, is_error=True, code="ABORTED")  # BUG: not TOOL_FAILED


def _plant_failed_as_aborted(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(scheduler_module.ToolStep, "_failed", _failed_as_aborted)


# -- 13: a cancelled approval is logged as rejected ------------------------------------------------


def _plant_cancelled_approval_rejected(mp: pytest.MonkeyPatch) -> None:
    real = build_module.approval_decided

    def decided(turn: int, step: int, approval_id: str, outcome: str) -> Any:
        # BUG: the approver's cancel is booked as a refusal
        return real(turn, step, approval_id, "rejected" if outcome == "cancelled" else outcome)

    mp.setattr(build_module, "approval_decided", decided)


# -- 14-17: flushes skipped or failures ignored, by a port that counts only the flushes the
# driver asked for (so ``acked`` never claims what the bug skipped: the driver must derive it)


def count_only_requested_flushes(mp: pytest.MonkeyPatch) -> None:
    """The world reports as acknowledged only a requested ``flush``, a shutdown and a cold
    open -- not the flush before a body (K17) nor the checkpoint after ``turn/end`` (K13).
    Under-reporting is allowed; it makes ``acked`` silent about exactly what bugs 14-17
    skip, so the driver finds them only by deriving durability from the journal."""

    def body_started(self: world_module.World, turn: int, call_id: str) -> None:
        self.bodies[call_id] = turn
        self.at_seam()
        self.reach("tool:running")

    def checkpointed(self: world_module.World) -> None:
        self._checkpoint_at = None

    mp.setattr(world_module.World, "body_started", body_started)
    mp.setattr(world_module.World, "_checkpointed", checkpointed)


def _prepare_with(*, flush: bool, run_after_failure: bool) -> Callable[..., Any]:
    """ToolStep._prepare, with the dispatch flush skipped (``flush=False``) or its failure
    ignored (``run_after_failure``)."""

    async def prepare(self: scheduler_module.ToolStep, slot: Any) -> bool:
        name = slot.block["name"]
        if slot.tool is None:
            self._settle(
                slot,
                self._refused(slot, "DENIED", scheduler_module.UNKNOWN_TOOL_TEXT.format(name=name)),
            )
            return False
        if self._approver is not None and not await self._approve(slot, self._approver):
            return False
        turn, step = self.ctx.turn, self.ctx.step
        self.append(
            *build_module.tool_call(
                turn, step, slot.block["id"], name, slot.block.get("arguments", {})
            )
        )
        slot.dispatched = True
        if flush:  # BUG (flush=False): the body starts without its tool/call on disk
            try:
                await self.session.flush()
            except Exception as exc:
                if not run_after_failure:
                    self._settle(slot, self._failed(slot, f"not durable: {exc}"))
                    return False
                # BUG: the flush failed, the body runs all the same
        await trio.lowlevel.checkpoint_if_cancelled()
        return True

    return prepare


def _plant_dispatch_not_flushed(mp: pytest.MonkeyPatch) -> None:
    count_only_requested_flushes(mp)
    mp.setattr(
        scheduler_module.ToolStep, "_prepare", _prepare_with(flush=False, run_after_failure=False)
    )


def _plant_body_after_failed_dispatch(mp: pytest.MonkeyPatch) -> None:
    count_only_requested_flushes(mp)
    mp.setattr(
        scheduler_module.ToolStep, "_prepare", _prepare_with(flush=True, run_after_failure=True)
    )


async def _checkpoint_skipped(self: agent_module.Agent) -> bool:
    return True  # BUG: the turn is reported finished without the flush after turn/end (K13)


async def _checkpoint_ignoring_failure(self: agent_module.Agent) -> bool:
    # BUG: a failed checkpoint is ignored: no AgentError, the run goes on (K13)
    with contextlib.suppress(Exception):
        await self._session.flush()
    return True


def _plant_checkpoint_skipped(mp: pytest.MonkeyPatch) -> None:
    count_only_requested_flushes(mp)
    mp.setattr(agent_module.Agent, "_checkpoint", _checkpoint_skipped)


def _plant_failed_checkpoint_ignored(mp: pytest.MonkeyPatch) -> None:
    count_only_requested_flushes(mp)
    mp.setattr(agent_module.Agent, "_checkpoint", _checkpoint_ignoring_failure)


# -- 18-19: the assistant message (K14) ------------------------------------------------------------


def _message_id_per_turn(ctx: Any) -> str:
    return f"a-{ctx.turn}"  # BUG: a-<turn>, so every step of a turn reuses one id


def _plant_message_id_per_turn(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(turn_module.TurnRunner, "_message_id", staticmethod(_message_id_per_turn))


def _rescue_nothing(self: turn_module.TurnRunner, ctx: Any, text: list[str]) -> None:
    """TurnRunner._rescue_interrupted, except the visible prefix is dropped (K14)."""


def _plant_cut_stream_leaves_nothing(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(turn_module.TurnRunner, "_rescue_interrupted", _rescue_nothing)


# -- 20: TurnPrevented only when work is parked (K2) ------------------------------------------


def _plant_prevented_only_with_work(mp: pytest.MonkeyPatch) -> None:
    real = agent_module.Agent._prevented

    def prevented(self: agent_module.Agent, controller: TurnController) -> None:
        inbox = self._session.inbox
        if inbox.next_turn or inbox.next_step:
            real(self, controller)
        else:
            self._state.prevent(controller)  # BUG: nothing queued, so no TurnPrevented

    mp.setattr(agent_module.Agent, "_prevented", prevented)


# -- 21-22: time (the virtual clock) --------------------------------------------------------------


async def _stream_delaying_once(
    self: scripted_module.ScriptedModel, request: Any, ctx: Any
) -> AsyncIterator[dict[str, Any]]:
    """ScriptedModel.stream, except that the chunk delay is slept once, before the first chunk
    (an entry with ``error`` is not played: the harness's plans end in a finish)."""
    entry = self.entry(self.calls)
    self.calls += 1
    await trio.sleep(float(entry.get("chunk_delay", self._default_delay)))  # BUG: once
    for piece in scripted_module.split_text(entry.get("text", "")):
        yield {"type": "text-delta", "text": piece}
    calls = entry.get("tool_calls", [])
    for n, call in enumerate(calls, start=1):
        yield {
            "type": "tool-call",
            "id": call.get("id") or f"call-{request.turn}-{request.step}-{n}",
            "name": call["name"],
            "arguments": dict(call.get("arguments", {})),
        }
    if "error" in entry:
        error = entry["error"]
        yield {"type": "finish", "reason": "error", "error": dict(error)}
        return
    yield {"type": "finish", "reason": entry.get("finish", "tool-calls" if calls else "stop")}


def _plant_chunk_delay_once(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(scripted_module.ScriptedModel, "stream", _stream_delaying_once)


def _clock_from_the_epoch(self: world_module.World) -> int:
    return round(trio.current_time() * 1000)  # BUG: not since this world's start


def _plant_clock_not_reset(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(world_module.World, "_clock", _clock_from_the_epoch)


# -- 23: the stopping hook after a model error (K10) ---------------------------------------------


def _plant_stopping_hook_after_error(mp: pytest.MonkeyPatch) -> None:
    real = turn_module.TurnRunner._step

    async def step(self: turn_module.TurnRunner, controller: TurnController, ctx: Any) -> Any:
        try:
            return await real(self, controller, ctx)
        except Exception:
            if not controller.cancel_called:
                await self.hooks.turn_stopping(ctx)  # BUG: the hook runs after a failed step
            raise

    mp.setattr(turn_module.TurnRunner, "_step", step)


# -- 24: the controller is created by the driver, not by the waking call (K1) ---------------------


def _start_without_controller(self: RunState) -> None:
    """RunState.start, except no controller is created: the agent says running at once."""
    self.status = "running"  # BUG: the controller comes later, when the driver picks up the wake


def _plant_controller_created_late(mp: pytest.MonkeyPatch) -> None:
    real_run = agent_module.Agent._run

    async def run(self: agent_module.Agent) -> None:
        state = self._state
        if state.controller is None and state.status == "running":
            state.controller = state.activity = TurnController()  # BUG: only now (K1)
        await real_run(self)

    mp.setattr(RunState, "start", _start_without_controller)
    mp.setattr(agent_module.Agent, "_run", run)


# -- 25: InboxDropped names a fixed cause (K4) ----------------------------------------------------


def _clear_inbox_as_user(self: agent_module.Agent, cause: CancelCause) -> None:
    """Agent._clear_inbox, except the event is given a default cause, not the one passed."""
    inbox = self._session.inbox
    target: Target
    for target in ("next-step", "next-turn"):
        queued = tuple(dict(m) for m in inbox.queues[target])
        if not queued:
            continue
        self._session.append(*build_module.inbox_cleared(target, len(queued)))
        self._emit(InboxDropped(target, queued, CancelCause.user()))  # BUG: not `cause`


def _plant_dropped_cause_default(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(agent_module.Agent, "_clear_inbox", _clear_inbox_as_user)


# -- 26: the pre-step hook's context counts the steps done, not the step about to start (K9) --


class _PreStepOneBehind(Hooks):
    """The turn's hooks, except pre_step gets ``step`` = the steps done so far."""

    def __init__(self, inner: Hooks) -> None:
        self._inner = inner

    async def pre_step(self, ctx: TurnContext, messages: Any) -> Any:
        # BUG: the context is built before the step counter moves on (0 before the first step)
        behind = TurnContext(ctx.turn, ctx.step - 1, ctx.controller)
        return await self._inner.pre_step(behind, messages)

    async def assemble_prompt(self, ctx: TurnContext) -> str:
        return await self._inner.assemble_prompt(ctx)

    async def turn_stopping(self, ctx: TurnContext) -> None:
        await self._inner.turn_stopping(ctx)


def _plant_pre_step_one_behind(mp: pytest.MonkeyPatch) -> None:
    real = turn_module.TurnRunner.__init__

    def init(self: turn_module.TurnRunner, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        self.hooks = _PreStepOneBehind(self.hooks)

    mp.setattr(turn_module.TurnRunner, "__init__", init)


# -- 27: the turn's message is claimed before the next-step input (K12) -----------------------


def _claim_turn_message_first(self: turn_module.TurnRunner, target: str) -> list[dict[str, Any]]:
    """TurnRunner._claim, except the next-turn item is claimed (and entered) first."""
    inbox = self.session.inbox
    batch: list[dict[str, Any]] = []
    if target == "next-turn" and inbox.next_turn:  # BUG: K12 claims all of next-step first
        batch.append(dict(inbox.next_turn[0]))
        self.append(*build_module.inbox_claimed("next-turn", 1))
    steered = [dict(m) for m in inbox.next_step]
    if steered:
        self.append(*build_module.inbox_claimed("next-step", len(steered)))
    return batch + steered


def _plant_turn_message_claimed_first(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(turn_module.TurnRunner, "_claim", _claim_turn_message_first)


# -- 28: a non-parallel call joins the parallel group before it (K15) --------------------------


def _groups_closing_after(self: scheduler_module.ToolStep) -> list[list[Any]]:
    """ToolStep._groups, except a non-parallel call closes the pool it joins instead of
    starting a group of its own."""
    groups: list[list[Any]] = []
    pool: list[Any] = []
    for slot in self._slots:
        pool.append(slot)  # BUG: appended before the barrier, so it overlaps the pool
        if slot.tool is not None and not slot.tool.parallel:
            groups.append(pool)
            pool = []
    if pool:
        groups.append(pool)
    return groups


def _plant_serial_call_in_parallel_group(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(scheduler_module.ToolStep, "_groups", _groups_closing_after)


# -- 29, 31: the driver loop (K21, K23), restated with one line changed ------------------------


async def _run_stopping_after_an_error(self: agent_module.Agent) -> None:
    """Agent._run, except a turn that ended ``error`` ends the run: queued work parks."""
    state = self._state
    controller = state.controller
    while controller is not None:
        if controller.cancel_called:
            self._prevented(controller)
            break
        if self.lost is not None:
            break
        await self._runner.run(controller, state.handoff, self._ended)
        durable = await self._checkpoint()
        controller = state.controller
        if controller is None or not durable:
            break
        if controller.cancel_called:
            self._prevented(controller)
            break
        if not self._session.inbox.has_pending:
            break
        outcome = self.last_outcome
        if outcome is not None and outcome.reason == "error":
            break  # BUG: only a cancel parks work (K21); an error turn does not stop the run
    self._go_idle()


def _plant_error_ends_the_run(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(agent_module.Agent, "_run", _run_stopping_after_an_error)


async def _run_idle_before_checkpoint(self: agent_module.Agent) -> None:
    """Agent._run, except that when no more work is pending the agent reports idle first and
    awaits the checkpoint after."""
    state = self._state
    controller = state.controller
    while controller is not None:
        if controller.cancel_called:
            self._prevented(controller)
            break
        if self.lost is not None:
            break
        await self._runner.run(controller, state.handoff, self._ended)
        if state.controller is None or not self._session.inbox.has_pending:
            self._go_idle()  # BUG: StatusChanged("idle") before the checkpoint (K23, K13)
            await self._checkpoint()
            return
        durable = await self._checkpoint()
        controller = state.controller
        if controller is None or not durable:
            break
        if controller.cancel_called:
            self._prevented(controller)
            break
    self._go_idle()


def _plant_idle_before_checkpoint(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(agent_module.Agent, "_run", _run_idle_before_checkpoint)


# -- 30: the shutdown drops the queue (K22) -----------------------------------------------------


def _begin_shutdown_dropping(self: agent_module.Agent) -> None:
    """Agent._begin_shutdown, except the disposal clears the inbox."""
    self._closing = True
    self.cancel(CancelCause.disposed())  # BUG: K22 step 2 keeps the inbox (keep_inbox=True)


def _plant_shutdown_drops_queue(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(agent_module.Agent, "_begin_shutdown", _begin_shutdown_dropping)


# -- 32: tool bodies run outside the turn's cancel scope (K6) -----------------------------------


def _plant_bodies_outside_scope(mp: pytest.MonkeyPatch) -> None:
    real = scheduler_module.ToolStep._body

    async def body(self: scheduler_module.ToolStep, slot: Any) -> None:
        # BUG: the body runs under no cancel of the turn (a port starting it with a fresh,
        # never-cancelled context), so a cancel waits until the body ends on its own (K6)
        with trio.CancelScope(shield=True):
            await real(self, slot)

    mp.setattr(scheduler_module.ToolStep, "_body", body)


# -- 33: calls never dispatched are left unanswered (K16) ----------------------------------------


def _answer_dispatched_only(self: scheduler_module.ToolStep) -> None:
    """ToolStep._answer_rest, except a call that never got its tool/call gets no result."""
    cancelled = self.controller.cancel_called
    for slot in self._slots:
        if slot.result is not None or not slot.dispatched:
            continue  # BUG: K16 answers every requested call, dispatched or not
        name = slot.block["name"]
        if cancelled:
            result = self._aborted(slot)
        else:
            result = self._failed(slot, scheduler_module.LOST_TEXT.format(name=name))
        self._settle(slot, result)


def _plant_undispatched_unanswered(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(scheduler_module.ToolStep, "_answer_rest", _answer_dispatched_only)


# -- 34: the batching window never expires (persistence.md §2) ----------------------------------


def _due_only_when_asked(self: WritePolicy, now: float) -> bool:
    """WritePolicy.due, except an expired window does not make the queue due: the writer
    writes when a flush waits or too much is pending (a retry still waits for its back-off)."""
    if not self.queue:
        return False
    if self.paused:
        return self.deadline is not None and now >= self.deadline
    return self.pending_bytes >= self.soft_limit or self.flushers > 0  # BUG: no `expired`


def _timer_only_for_retries(self: WritePolicy) -> float | None:
    """WritePolicy.timer, except the writer sets no timer for a window (only for a retry)."""
    return self.deadline if self.queue and self.paused else None


def _plant_window_never_expires(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(WritePolicy, "due", _due_only_when_asked)
    mp.setattr(WritePolicy, "timer", property(_timer_only_for_retries))


# -- 35-38: where a cancel lands between seams (K6, K7, K14, K17) -------------------------------


async def _prepare_unchecked_after_flush(self: scheduler_module.ToolStep, slot: Any) -> bool:
    """ToolStep._prepare, except that the cancel is not checked once the dispatch flush has
    returned: a cancel that landed in the flush after its write lets the body start."""
    name = slot.block["name"]
    if slot.tool is None:
        self._settle(
            slot,
            self._refused(slot, "DENIED", scheduler_module.UNKNOWN_TOOL_TEXT.format(name=name)),
        )
        return False
    if self._approver is not None and not await self._approve(slot, self._approver):
        return False
    turn, step = self.ctx.turn, self.ctx.step
    self.append(
        *build_module.tool_call(turn, step, slot.block["id"], name, slot.block.get("arguments", {}))
    )
    slot.dispatched = True
    try:
        await self.session.flush()
    except Exception as exc:
        self._settle(slot, self._failed(slot, f"not durable: {exc}"))
        return False
    return True  # BUG: no checkpoint_if_cancelled: the flush returned, so the body starts (K17)


def _plant_body_after_cancel_in_dispatch_flush(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(scheduler_module.ToolStep, "_prepare", _prepare_unchecked_after_flush)


def _handoff_installing_nothing(self: RunState, controller: TurnController, aborted: bool) -> None:
    """RunState.handoff, except the next turn's controller is not installed here."""
    controller.close()
    self.controller = None  # BUG: the next controller comes after the checkpoint (K7)


async def _run_controller_after_checkpoint(self: agent_module.Agent) -> None:
    """Agent._run, except the next turn's controller is created after the checkpoint, so a
    cancel from an observer of turn/end (or during the checkpoint) reaches nothing."""
    state = self._state
    controller = state.controller
    while controller is not None:
        if controller.cancel_called:
            self._prevented(controller)
            break
        if self.lost is not None:
            break
        await self._runner.run(controller, state.handoff, self._ended)
        durable = await self._checkpoint()
        outcome = self.last_outcome
        if outcome is None or outcome.reason == "aborted" or not durable:
            break
        controller = state.controller = state.activity = TurnController()  # BUG: only now
        if not self._session.inbox.has_pending:
            break
    self._go_idle()


def _plant_next_controller_after_checkpoint(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(RunState, "handoff", _handoff_installing_nothing)
    mp.setattr(agent_module.Agent, "_run", _run_controller_after_checkpoint)


async def _tool_step_run_unchecked(self: scheduler_module.ToolStep) -> None:
    """ToolStep.run, except the cancel is not checked before each call is prepared."""
    try:
        for group in self._groups():
            async with trio.open_nursery() as nursery:
                for slot in group:
                    # BUG: no checkpoint_if_cancelled: a cancel that landed after the
                    # assistant message (no seam since) still asks for the approval (K6)
                    if await self._prepare(slot):
                        nursery.start_soon(self._body, slot)
    finally:
        if not self._is_fatal():
            self._answer_rest()


def _plant_call_prepared_after_cancel(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(scheduler_module.ToolStep, "run", _tool_step_run_unchecked)


async def _stream_unchecked_after_finish(
    self: turn_module.TurnRunner,
    controller: TurnController,
    ctx: TurnContext,
    request: Any,
    streamed: Any,
) -> None:
    """TurnRunner._stream, except the cancel is not checked after the last chunk."""
    stream = self.model.stream(request, ctx)
    try:
        async for raw in stream:
            chunk = check_chunk(raw)
            await self.session.wait_writable()
            self._append_chunk(ctx.turn, ctx.step, chunk)
            if streamed.take(chunk):
                break
        # BUG: no checkpoint_if_cancelled: a cancel after the finish chunk writes the whole
        # message, calls included, instead of the interrupted prefix (K14)
    except BaseException as exc:
        failed = isinstance(exc, Exception)
        if (controller.cancel_called or failed) and self.fatal is None:
            self._rescue_interrupted(ctx, streamed.text)
        raise
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with trio.move_on_after(turn_module.CLEANUP_BOUND, shield=True):
                await aclose()


def _plant_finish_then_cancel_not_cut(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(turn_module.TurnRunner, "_stream", _stream_unchecked_after_finish)


# -- 39: results committed in completion order (K16) --------------------------------------------


def _settle_in_completion_order(self: scheduler_module.ToolStep, slot: Any, result: Any) -> None:
    """ToolStep._settle, except each result is appended as soon as its call has one."""
    slot.result = result
    self.append(*result)  # BUG: not held back until every earlier call has its result


def _plant_results_in_completion_order(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(scheduler_module.ToolStep, "_settle", _settle_in_completion_order)


# -- 40-41: a cancel from inside a session observer that must clear the inbox (K5, K7) -------------


def _cancel_skipping_controller_on_error(
    self: agent_module.Agent, cause: CancelCause, *, keep_inbox: bool = False
) -> bool:
    """Agent.cancel, except a clear that raises skips the controller's cancel."""
    require_cause(cause)
    if self._closed:
        return False
    if not keep_inbox:
        self._clear_inbox(cause)  # BUG: no try/finally: refused here, the turn is not cancelled
        self._state.forget_latch()
    return self._state.cancel(cause)


def _plant_observer_cancel_ignored(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(agent_module.Agent, "cancel", _cancel_skipping_controller_on_error)


def _cancel_swallowing_refused_clear(
    self: agent_module.Agent, cause: CancelCause, *, keep_inbox: bool = False
) -> bool:
    """Agent.cancel, except a refused clear is swallowed: the queue stays, silently."""
    require_cause(cause)
    if self._closed:
        return False
    if not keep_inbox:
        with contextlib.suppress(ReentrantAppend):  # BUG: the caller never learns
            self._clear_inbox(cause)
        self._state.forget_latch()
    return self._state.cancel(cause)


def _plant_refused_clear_swallowed(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(agent_module.Agent, "cancel", _cancel_swallowing_refused_clear)


# -- 42-43: open_agent takes ownership of the session (K24) ---------------------------------------


def _plant_agent_closes_session(mp: pytest.MonkeyPatch) -> None:
    real = agent_module.open_agent  # what the world's name is bound to, patched below

    @contextlib.asynccontextmanager
    async def open_agent(session: Any, **kwargs: Any) -> AsyncIterator[agent_module.Agent]:
        async with real(session, **kwargs) as agent:
            yield agent
        await session.aclose()  # BUG: the agent owns the session and closes it on exit

    mp.setattr(world_module, "open_agent", open_agent)


@contextlib.asynccontextmanager
async def _open_agent_without_final_flush(
    session: Any, **kwargs: Any
) -> AsyncIterator[agent_module.Agent]:
    """open_agent, except that leaving it does not flush the session."""
    if session.closed:
        raise ValueError(f"session {session.id!r} is closed")
    if session.open_turn is not None:
        raise ValueError(f"session {session.id!r} has turn {session.open_turn} open")
    if session in agent_module._attached:
        raise RuntimeError(f"session {session.id!r} already has an agent")
    agent = agent_module.Agent(session, **kwargs)
    agent_module._attached.add(session)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent._drive)
            nursery.start_soon(agent._watch_lease)
            try:
                yield agent
            finally:
                agent._begin_shutdown()
                with trio.move_on_after(agent_module.DEFAULT_SHUTDOWN_TIMEOUT, shield=True):
                    await agent.wait_idle()
                nursery.cancel_scope.cancel()
        # BUG: no final flush: what the agent appended since its last flush is left queued
    finally:
        agent._finish_shutdown()
        agent_module._attached.discard(session)


def _plant_agent_exit_skips_flush(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(world_module, "open_agent", _open_agent_without_final_flush)


BUGS = [
    Bug(
        "turn-end-in-cancelled-scope",
        "turn/end is written inside the cancelled scope after an unshielded await",
        _plant_turn_end_in_scope,
        r"still running|turn/end",
    ),
    Bug(
        "controller-outlives-turn",
        "the agent keeps the last controller past the end of its run; a late cancel reaches it",
        _plant_stale_controller,
        r"live controller",
    ),
    Bug(
        "repair-turn-before-step",
        "crash repair appends turn/end before step/end",
        _plant_turn_before_step,
        r"I5: turn/end \d+ while step",
    ),
    Bug(
        "writer-drops-failed-batch",
        "the writer forgets a batch whose write failed",
        _plant_dropping_writer,
        r"durable bytes|acknowledged|K13: .* journal.s writes",
    ),
    Bug(
        "cancel-leaks-into-next-turn",
        "a cancel that hit a turn also cancels the next run's controller",
        _plant_cancel_leaks,
        r"TurnPrevented without a cancelled controller|K2",
    ),
    Bug(
        "finish-chunk-not-logged",
        "the model stream's finish chunk is not appended as assistant/chunk",
        _plant_unlogged_finish,
        r"the finish included|before the stream.s finish chunk",
    ),
    Bug(
        "plain-calls-skip-approval",
        "calls of parallel tools are approved without logging the approval bracket",
        _plant_plain_calls_unbracketed,
        r"without an allowed approval bracket",
    ),
    Bug(
        "steer-after-abort-in-next-step",
        "a steer sent while a cancelled turn unwinds is queued next-step, not next-turn",
        _plant_steer_after_abort,
        r"steer queued its message on next-step, expected next-turn",
    ),
    Bug(
        "second-cancel-hits",
        "cancelling an already cancelled controller returns True",
        _plant_second_cancel_hits,
        r"hit=True but the model has a cancelled",
    ),
    Bug(
        "latched-wake-forgotten",
        "a wake latched after an abort is dropped when the run goes idle",
        _plant_latch_forgotten,
        r"latched wake",
    ),
    Bug(
        "keep-inbox-misread",
        "the adapter reads every requested cancel as keep_inbox=false and journals that "
        "honestly (the journal alone agrees with itself)",
        _plant_keep_inbox_misread,
        r"K5: the driver asked to cancel with cause '\w+', keep_inbox True; the journal says",
    ),
    Bug(
        "failed-job-coded-aborted",
        "a body that raised (no cancel) gets an ABORTED result instead of TOOL_FAILED",
        _plant_failed_as_aborted,
        r"after `tool fail` is isError=True, code 'ABORTED'",
    ),
    Bug(
        "cancelled-approval-rejected",
        "an approval the cancel interrupted is logged as rejected, not cancelled",
        _plant_cancelled_approval_rejected,
        r"can only be 'cancelled' \(K11\)",
    ),
    Bug(
        "dispatch-not-flushed",
        "a tool body starts without the flush after its tool/call, and the port does not "
        "count that flush (K17)",
        _plant_dispatch_not_flushed,
        r"K17: the body of \S+ ran",
    ),
    Bug(
        "body-after-failed-dispatch-flush",
        "the flush after a tool/call fails (disk full) and the body runs all the same (K17)",
        _plant_body_after_failed_dispatch,
        r"K17: the body of \S+ ran",
    ),
    Bug(
        "checkpoint-skipped",
        "the run goes on after turn/end without the checkpoint flush, and the port does not "
        "count it (K13)",
        _plant_checkpoint_skipped,
        r"K13: .* after turn \d+'s turn/end",
    ),
    Bug(
        "failed-checkpoint-ignored",
        "the checkpoint flush after turn/end fails (disk full) and the run goes on without "
        "AgentError (K13)",
        _plant_failed_checkpoint_ignored,
        r"K13: .* after turn \d+'s turn/end",
    ),
    Bug(
        "message-id-per-turn",
        "the assistant message id is a-<turn>, not a-<turn>-<step> (K14)",
        _plant_message_id_per_turn,
        r"assistant/message is .*K14",
    ),
    Bug(
        "cut-stream-leaves-no-message",
        "a cancelled or failed stream's visible text is not kept as an interrupted "
        "assistant/message (K14)",
        _plant_cut_stream_leaves_nothing,
        r"ended without an assistant/message",
    ),
    Bug(
        "prevented-only-with-work",
        "a turn prevented by a cancel that cleared the inbox emits no TurnPrevented (K2)",
        _plant_prevented_only_with_work,
        r"without TurnPrevented",
    ),
    Bug(
        "chunk-delay-once",
        "the scripted model waits its chunk delay once, before the first chunk, not before each",
        _plant_chunk_delay_once,
        r"chunk \d+ of turn \d+ step \d+ has time",
    ),
    Bug(
        "clock-not-reset",
        "event times count from the clock's epoch, not from the world's start",
        _plant_clock_not_reset,
        r"time \d+, but the world's virtual clock read",
    ),
    Bug(
        "stopping-hook-after-error",
        "the turn-stopping hook runs after a step whose model failed (K10)",
        _plant_stopping_hook_after_error,
        r"K10: turn_stopping ran for turn \d+ step \d+, but its model failed",
    ),
    Bug(
        "controller-created-late",
        "the driver creates the turn's controller when it picks up the wake, not the waking "
        "call, so a cancel from the running listener reaches nothing (K1)",
        _plant_controller_created_late,
        r"hit=False but the model has a unbound controller",
    ),
    Bug(
        "dropped-cause-default",
        "InboxDropped names the cause user whatever cause was passed to cancel (K4)",
        _plant_dropped_cause_default,
        r"K4: InboxDropped",
    ),
    Bug(
        "pre-step-step-behind",
        "the pre-step hook's context carries the steps done so far, not the step about to "
        "start (K9)",
        _plant_pre_step_one_behind,
        r"K9: the pre_step hook",
    ),
    Bug(
        "turn-message-claimed-first",
        "the first step claims the turn's message before the next-step input, and enters "
        "them in that order (K12)",
        _plant_turn_message_claimed_first,
        r"claimed next-step input after the turn's message",
    ),
    Bug(
        "serial-call-in-parallel-group",
        "a non-parallel call joins the group of the parallel calls before it, so its body "
        "overlaps theirs (K15)",
        _plant_serial_call_in_parallel_group,
        r"K15: ",
    ),
    Bug(
        "error-turn-ends-run",
        "a turn that ended error ends the run, and the queued work parks (K21)",
        _plant_error_ends_the_run,
        r"K21",
    ),
    Bug(
        "shutdown-drops-queue",
        "leaving the agent cancels with keep_inbox false, dropping the queued work (K22)",
        _plant_shutdown_drops_queue,
        r"dropped without a cancel that clears the inbox",
    ),
    Bug(
        "idle-before-checkpoint",
        "the agent reports idle before it awaits the checkpoint flush after the last turn/end "
        "(K23)",
        _plant_idle_before_checkpoint,
        r"K13: the agent reported idle after turn \d+'s turn/end",
    ),
    Bug(
        "bodies-outside-cancel-scope",
        "tool bodies run shielded from the turn's cancel, so a cancelled turn waits for its "
        "running body to end on its own (K6)",
        _plant_bodies_outside_scope,
        r"was cancelled but has not ended|did not shut down",
    ),
    Bug(
        "undispatched-calls-unanswered",
        "when a step stops early, calls that never got their tool/call are left without a "
        "result (K16)",
        _plant_undispatched_unanswered,
        r"I16",
    ),
    Bug(
        "window-never-expires",
        "the writer writes only when a flush asks (or too much is pending): a queued line's "
        "batching window never makes it due (persistence.md §2)",
        _plant_window_never_expires,
        r"persistence.md §2: \d+ events stamped before",
    ),
    Bug(
        "body-after-cancel-in-dispatch-flush",
        "a cancel that lands in the flush after a tool/call, once its write is done, is not "
        "checked when the flush returns: the body starts all the same (K17)",
        _plant_body_after_cancel_in_dispatch_flush,
        r"cancelled in the flush after its tool/call",
    ),
    Bug(
        "next-controller-after-checkpoint",
        "the next turn's controller is created after the checkpoint, not at the hand-off, so a "
        "cancel from an observer of turn/end reaches nothing (K7)",
        _plant_next_controller_after_checkpoint,
        r"cancel returned hit=False",
    ),
    Bug(
        "call-prepared-after-cancel",
        "the cancel is not checked before a call is prepared: a cancel after the assistant "
        "message still asks for the call's approval (K6)",
        _plant_call_prepared_after_cancel,
        r"after a cancel reached it \(K6",
    ),
    Bug(
        "finish-then-cancel-not-cut",
        "the cancel is not checked after the last chunk: a cancel after the finish chunk "
        "writes the whole assistant message, not the interrupted prefix (K14)",
        _plant_finish_then_cancel_not_cut,
        r"assistant/message is .*\(K14\)",
    ),
    Bug(
        "results-in-completion-order",
        "each tool/result is committed when its body finishes, not in request order: of two "
        "parallel calls, the later one that finishes first is answered first (K16)",
        _plant_results_in_completion_order,
        r"K16: results are committed in request order",
    ),
    Bug(
        "observer-cancel-ignored",
        "a cancel whose clear of the inbox raises (from inside a session observer, with "
        "messages queued) never cancels the live controller (K5, K7)",
        _plant_observer_cancel_ignored,
        r"cancel returned hit=False",
    ),
    Bug(
        "refused-clear-swallowed",
        "a cancel whose clear of the inbox is refused inside a session observer swallows the "
        "error: the queue stays and the caller is not told (K5)",
        _plant_refused_clear_swallowed,
        r"returned without an error",
    ),
    Bug(
        "agent-closes-session",
        "leaving open_agent closes the session: the agent took ownership of it (K24)",
        _plant_agent_closes_session,
        r"K24: leaving the agent closed the session",
    ),
    Bug(
        "agent-exit-skips-flush",
        "leaving open_agent does not flush the session: what was appended since the last "
        "flush stays queued (K24)",
        _plant_agent_exit_skips_flush,
        r"K24: the agent was left \(new_agent\) with events",
    ),
]
