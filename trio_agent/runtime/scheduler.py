"""Running the tool calls of one step (spec/cancel.md K15-K18).

The calls come from the step's ``assistant/message``, in the order the model asked for them.
They are grouped: a run of consecutive ``parallel`` calls is one pool whose bodies overlap; a
non-parallel call is a group of its own, which starts after the previous group has finished
and finishes before the next starts. Each group is a nursery inside the turn's cancel scope,
so a cancel reaches every running body, and the step cannot go on while a body still runs.

Within a group, calls are prepared one at a time in model order: the approval bracket (when
the agent has an approver), then ``tool/call`` (the dispatch marker), then a flush so that
marker is durable, and only then the body starts. Results are committed strictly in model
order, each only after its body has returned or raised, so a later call that finishes first
waits for the earlier ones. When the step stops early, every call still unanswered gets a
result in the same order: ``ABORTED`` if its ``tool/call`` is in the log, otherwise
``ABORTED_BEFORE_DISPATCH`` — never a call without a result (K16, K18).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import trio

from ..cancel import ControllerView
from ..failures import exception_text
from ..log import build
from ..log.build import Draft
from ..tools.base import Stream, Tool, ToolCall, ToolOutcome
from .controller import TurnContext, TurnController
from .hooks import Approver

if TYPE_CHECKING:
    from ..store import Session

__all__ = [
    "ABORTED_BEFORE_DISPATCH_TEXT",
    "ABORTED_BEFORE_START_TEXT",
    "ABORTED_TEXT",
    "DENIED_TEXT",
    "FAILED_TEXT",
    "NOT_DURABLE_TEXT",
    "UNKNOWN_TOOL_TEXT",
    "ToolStep",
]

#: Result texts (the ``content`` the model reads). ``{name}`` is the tool's name.
ABORTED_TEXT: Final = "The {name} call was cancelled while it ran; it has stopped."
ABORTED_BEFORE_START_TEXT: Final = (
    "The {name} call was cancelled after it was dispatched but before its body started; "
    "nothing ran."
)
ABORTED_BEFORE_DISPATCH_TEXT: Final = (
    "The {name} call was cancelled before it started; nothing ran."
)
NOT_STARTED_AFTER_FAILURE_TEXT: Final = (
    "The {name} call did not start because the step failed before its turn came."
)
DENIED_TEXT: Final = "The {name} call was not approved, so it did not run."
UNKNOWN_TOOL_TEXT: Final = "There is no tool named {name}, so the call did not run."
FAILED_TEXT: Final = "The {name} call failed: {error}"
NOT_DURABLE_TEXT: Final = (
    "The {name} call did not run: its dispatch could not be made durable ({error})."
)
LOST_TEXT: Final = "The {name} call ended without reporting a result (internal failure)."

_TOOL_OUTCOME_CODES: Final = frozenset({"TOOL_FAILED", "ABORTED"})

Append = Callable[[str, Mapping[str, Any]], object]


class _Slot:
    __slots__ = ("block", "details", "dispatched", "result", "started", "tool")

    def __init__(self, block: Mapping[str, Any], tool: Tool | None) -> None:
        self.block = block
        self.tool = tool
        self.dispatched = False  # tool/call is in the log
        self.started = False  # the body was started
        self.result: Draft | None = None  # settled, maybe not yet committed
        self.details: list[str] = []


class _ToolContext:
    """The :class:`~trio_agent.tools.base.ToolContext` of one call. Its appends are refused
    once the body has returned or raised (no zombie writes)."""

    __slots__ = ("_finished", "_slot", "_step")

    def __init__(self, step: ToolStep, slot: _Slot) -> None:
        self._step = step
        self._slot = slot
        self._finished = False

    @property
    def turn(self) -> int:
        return self._step.ctx.turn

    @property
    def step(self) -> int:
        return self._step.ctx.step

    @property
    def call_id(self) -> str:
        call_id: str = self._slot.block["id"]
        return call_id

    @property
    def controller(self) -> ControllerView:
        return self._step.ctx.controller

    def _check(self, what: str) -> None:
        if self._finished:
            raise RuntimeError(f"{what} for call {self.call_id!r} after its body finished")

    def output(self, stream: Stream, text: str) -> None:
        self._check("tool output")
        if stream not in ("stdout", "stderr") or type(text) is not str:
            raise TypeError(f"tool output needs stream stdout|stderr and str text: {stream!r}")
        ctx = self._step.ctx
        self._step.append(*build.tool_output(ctx.turn, ctx.step, self.call_id, stream, text))

    def spawned(
        self, pgid: int, identity: str, *, containment: str | None = None, owner: str | None = None
    ) -> None:
        self._check("tool/spawned")
        if type(pgid) is not int or pgid < 1 or type(identity) is not str or not identity:
            raise TypeError(f"tool/spawned needs an int pgid >= 1 and an identity: {pgid!r}")
        ctx = self._step.ctx
        self._step.append(
            *build.tool_spawned(
                ctx.turn,
                ctx.step,
                self.call_id,
                pgid,
                identity,
                containment=containment,
                owner=owner,
            )
        )

    def abort_detail(self, text: str) -> None:
        self._check("abort detail")
        self._slot.details.append(str(text))

    async def flush(self) -> None:
        self._check("flush")
        await self._step.session.flush()

    def finish(self) -> None:
        self._finished = True


class ToolStep:
    """Runs the calls of one step and answers every one of them (see the module docstring)."""

    def __init__(
        self,
        *,
        session: Session,
        append: Append,
        controller: TurnController,
        ctx: TurnContext,
        blocks: Sequence[Mapping[str, Any]],
        tools: Mapping[str, Tool],
        approver: Approver | None,
        is_fatal: Callable[[], bool],
    ) -> None:
        self.session = session
        self.append = append
        self.controller = controller
        self.ctx = ctx
        self._approver = approver
        self._is_fatal = is_fatal
        self._slots = [_Slot(b, tools.get(b["name"])) for b in blocks]
        self._next_commit = 0

    # -- plan -----------------------------------------------------------------------------------

    def _groups(self) -> list[list[_Slot]]:
        groups: list[list[_Slot]] = []
        pool: list[_Slot] = []
        for slot in self._slots:
            if slot.tool is None or slot.tool.parallel:
                pool.append(slot)  # an unknown tool never runs, so it never needs a barrier
                continue
            if pool:
                groups.append(pool)
                pool = []
            groups.append([slot])
        if pool:
            groups.append(pool)
        return groups

    # -- run ------------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            for group in self._groups():
                async with trio.open_nursery() as nursery:
                    for slot in group:
                        await trio.lowlevel.checkpoint_if_cancelled()
                        if await self._prepare(slot):
                            nursery.start_soon(self._body, slot)
        finally:
            if not self._is_fatal():
                self._answer_rest()

    async def _prepare(self, slot: _Slot) -> bool:
        """Approval, dispatch marker, flush. True when the body may start."""
        name = slot.block["name"]
        if slot.tool is None:
            self._settle(slot, self._refused(slot, "DENIED", UNKNOWN_TOOL_TEXT.format(name=name)))
            return False
        if self._approver is not None and not await self._approve(slot, self._approver):
            return False
        turn, step = self.ctx.turn, self.ctx.step
        self.append(
            *build.tool_call(turn, step, slot.block["id"], name, slot.block.get("arguments", {}))
        )
        slot.dispatched = True
        try:
            await self.session.flush()
        except Exception as exc:  # a write error: the body must not run (K17)
            self._settle(
                slot,
                self._failed(slot, NOT_DURABLE_TEXT.format(name=name, error=exception_text(exc))),
            )
            return False
        await trio.lowlevel.checkpoint_if_cancelled()
        return True

    async def _approve(self, slot: _Slot, approver: Approver) -> bool:
        turn, step = self.ctx.turn, self.ctx.step
        call_id = slot.block["id"]
        approval_id = f"approval-{call_id}"
        self.append(*build.approval_asked(turn, step, approval_id, call_id, slot.block["name"]))
        reason = ""
        try:
            allowed = await approver.approve(self._call(slot), self.ctx)
        except BaseException as exc:
            if isinstance(exc, Exception) and not self.controller.cancel_called:
                allowed, reason = False, f" (the approver failed: {exception_text(exc)})"
            else:
                if not self._is_fatal():
                    self.append(*build.approval_decided(turn, step, approval_id, "cancelled"))
                raise
        allowed = allowed is True
        outcome = "allowed" if allowed else "rejected"
        self.append(*build.approval_decided(turn, step, approval_id, outcome))
        if not allowed:
            text = DENIED_TEXT.format(name=slot.block["name"]) + reason
            self._settle(slot, self._refused(slot, "DENIED", text))
            return False
        await trio.lowlevel.checkpoint_if_cancelled()
        return True

    def _call(self, slot: _Slot) -> ToolCall:
        block = slot.block
        return ToolCall(
            block["id"], block["name"], MappingProxyType(dict(block.get("arguments", {})))
        )

    async def _body(self, slot: _Slot) -> None:
        assert slot.tool is not None
        slot.started = True
        ctx = _ToolContext(self, slot)
        try:
            outcome = await slot.tool.run(self._call(slot), ctx)
        except BaseException as exc:
            ctx.finish()
            if self._is_fatal():
                raise
            if self.controller.cancel_called or not isinstance(exc, Exception):
                if isinstance(exc, Exception):
                    slot.details.append(f"it raised {exception_text(exc)} while stopping")
                self._settle(slot, self._aborted(slot))
            else:
                text = FAILED_TEXT.format(name=slot.block["name"], error=exception_text(exc))
                self._settle(slot, self._failed(slot, text))
            if not isinstance(exc, Exception):
                raise
            return
        ctx.finish()
        if self.controller.cancel_called:
            slot.details.append("its body returned after the cancel")
            self._settle(slot, self._aborted(slot))
        else:
            self._settle(slot, self._from_outcome(slot, outcome))

    # -- results --------------------------------------------------------------------------------

    def _result(self, slot: _Slot, content: str, *, is_error: bool, code: str | None) -> Draft:
        turn, step = self.ctx.turn, self.ctx.step
        return build.tool_result(
            turn, step, slot.block["id"], content, is_error=is_error, code=code
        )

    def _refused(self, slot: _Slot, code: str, text: str) -> Draft:
        return self._result(slot, text, is_error=True, code=code)

    def _failed(self, slot: _Slot, text: str) -> Draft:
        return self._result(slot, text, is_error=True, code="TOOL_FAILED")

    def _aborted(self, slot: _Slot) -> Draft:
        name = slot.block["name"]
        text = (ABORTED_TEXT if slot.started else ABORTED_BEFORE_START_TEXT).format(name=name)
        if slot.details:
            text += " " + "; ".join(slot.details)
        return self._result(slot, text, is_error=True, code="ABORTED")

    def _from_outcome(self, slot: _Slot, outcome: object) -> Draft:
        name = slot.block["name"]
        if not isinstance(outcome, ToolOutcome):
            text = FAILED_TEXT.format(
                name=name, error=f"it returned {outcome!r}, not a ToolOutcome"
            )
            return self._failed(slot, text)
        code = outcome.error_code
        if code is not None and code not in _TOOL_OUTCOME_CODES:
            code = "TOOL_FAILED"  # a tool may not claim a code that belongs to the loop or repair
        return self._result(slot, str(outcome.content), is_error=bool(outcome.is_error), code=code)

    def _settle(self, slot: _Slot, result: Draft) -> None:
        """Record a call's result and commit every result now due, in model order."""
        slot.result = result
        slots = self._slots
        while self._next_commit < len(slots):
            ready = slots[self._next_commit].result
            if ready is None:
                return
            self.append(*ready)
            self._next_commit += 1

    def _answer_rest(self) -> None:
        """Give every call still without a result one, in order (never leave one unanswered)."""
        cancelled = self.controller.cancel_called
        for slot in self._slots:
            if slot.result is not None:
                continue
            name = slot.block["name"]
            if slot.dispatched:
                if cancelled:
                    result = self._aborted(slot)
                else:
                    result = self._failed(slot, LOST_TEXT.format(name=name))
            else:
                text = ABORTED_BEFORE_DISPATCH_TEXT if cancelled else NOT_STARTED_AFTER_FAILURE_TEXT
                result = self._refused(slot, "ABORTED_BEFORE_DISPATCH", text.format(name=name))
            self._settle(slot, result)
