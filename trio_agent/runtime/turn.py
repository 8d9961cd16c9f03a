"""One turn: claim, steps, model stream, tools, the terminal ``turn/end`` (spec/cancel.md K12-K20).

:class:`TurnRunner` runs a single turn under a given controller. The agent owns the driver,
the inbox operations and the hand-off; this module owns what a turn writes:

``turn/start`` → per step: claim → pre-step hook → ``step/start`` → ``user/message``… →
prompt assembly → model stream (one ``assistant/chunk`` per chunk, as it arrives) →
``assistant/message`` → tools → ``step/end`` (in ``finally``) → another step while the model
called tools or input was steered in → ``turn/end`` (in ``finally``).

``step/end`` and ``turn/end`` are synchronous appends, so they are written even while the
turn's scope is cancelled; the only awaits in cleanup (closing the model's iterator) are
shielded and bounded. An append the session refuses as invalid is a bug in this loop: it is
*fatal*, nothing more is written and the error propagates out of the agent (loud failure).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from ..cancel import CancelCause
from ..failures import exception_text, innermost
from ..log import build
from ..log.errors import LogViolation
from ..models.base import Model, ModelError, ModelRequest, Transcript, check_chunk
from ..store.errors import SessionClosed
from ..tools.base import Tool
from .controller import TurnContext, TurnController
from .events import OutcomeKind, RuntimeEvent, TurnOutcome, TurnStarted
from .hooks import Approver, Hooks, Reject
from .scheduler import ToolStep

if TYPE_CHECKING:
    from ..log.envelope import Event
    from ..store import Session

__all__ = ["CLEANUP_BOUND", "TurnRunner", "error_info"]

#: Upper bound (seconds) of any shielded await in a turn's cleanup.
CLEANUP_BOUND: Final = 5.0

#: Errors of an append that mean the loop itself is wrong (or the session is gone).
_FATAL: Final = (LogViolation, SessionClosed)


def error_info(exc: BaseException) -> dict[str, str]:
    """``{code, message}`` for a failure: a :class:`ModelError` keeps its code, anything
    else is ``UNKNOWN`` with the exception's type and text."""
    leaf = innermost(exc)
    if isinstance(leaf, ModelError):
        return {"code": leaf.code, "message": leaf.message}
    return {"code": "UNKNOWN", "message": exception_text(leaf)}


def _message(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"pre_step must return messages {{id, text, source}}, got {value!r}")
    mid, text, source = value.get("id"), value.get("text"), value.get("source")
    if type(mid) is not str or not mid or type(text) is not str or type(source) is not str:
        raise TypeError(
            f"a message needs a non-empty str id, a str text and a str source: {value!r}"
        )
    return {"id": mid, "text": text, "source": source}


class _Streamed:
    """What one model stream has produced so far: its text, its calls, its ``finish``."""

    __slots__ = ("_ids", "_used", "calls", "finish", "text")

    def __init__(self, used: Callable[[str], bool] = lambda _: False) -> None:
        self.text: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.finish: Mapping[str, Any] | None = None
        self._ids: set[str] = set()
        self._used = used  # is this call id already in the log? (I10)

    def take(self, chunk: Mapping[str, Any]) -> bool:
        """Fold in one (checked) chunk; True at the ``finish`` chunk, where the stream ends."""
        kind = chunk["type"]
        if kind == "text-delta":
            self.text.append(chunk["text"])
        elif kind == "tool-call":
            call_id = chunk["id"]
            if call_id in self._ids:
                raise ModelError("BAD_CHUNK", f"tool-call id {call_id!r} repeated")
            if self._used(call_id):
                # The model's fault, not the loop's: the turn fails, the log stays valid.
                raise ModelError(
                    "BAD_CHUNK", f"tool-call id {call_id!r} is already used in this session"
                )
            self._ids.add(call_id)
            block = {
                "type": "tool-call",
                "id": call_id,
                "name": chunk["name"],
                "arguments": chunk.get("arguments", {}),
            }
            if "providerId" in chunk:
                block["providerId"] = chunk["providerId"]
            self.calls.append(block)
        elif kind == "finish":
            self.finish = chunk
            return True
        return False


class TurnRunner:
    """Runs turns against one session (see the module docstring)."""

    def __init__(
        self,
        session: Session,
        model: Model,
        tools: Mapping[str, Tool],
        approver: Approver | None,
        hooks: Hooks,
        emit: Callable[[RuntimeEvent], None],
    ) -> None:
        self.session = session
        self.model = model
        self.tools = tools
        self.approver = approver
        self.hooks = hooks
        self.emit = emit
        #: The first append the session refused as invalid (or closed); once set it stays set
        #: and nothing more is written (K20).
        self.fatal: BaseException | None = None
        self._transcript = Transcript()
        self._tool_names = tuple(tools)
        self._tool_specs = tuple(
            {
                "name": name,
                "description": getattr(tool, "description", ""),
                "parameters": dict(getattr(tool, "parameters", {"type": "object"})),
            }
            for name, tool in tools.items()
        )

    # -- appends --------------------------------------------------------------------------------

    def append(self, type_: str, data: Mapping[str, Any]) -> Event:
        """Append an event; a refusal (:data:`_FATAL`) is fatal, for good (K20)."""
        self._check_not_fatal()
        try:
            return self.session.append(type_, data)
        except _FATAL as exc:
            self.fatal = exc
            raise

    def _append_chunk(self, turn: int, step: int, chunk: Mapping[str, Any]) -> None:
        """Append a model chunk; a chunk the schema refuses (rule I0, e.g. a value that is not
        JSON) is the model's fault, not the loop's: nothing was recorded and the log is still
        valid, so it is not fatal; the turn fails with ``BAD_CHUNK`` (K14). Any other refusal
        is fatal, as for :meth:`append`."""
        self._check_not_fatal()
        try:
            self.session.append(*build.assistant_chunk(turn, step, chunk))
        except LogViolation as exc:
            if exc.rule == "I0":
                raise ModelError("BAD_CHUNK", exc.message) from None
            self.fatal = exc
            raise
        except SessionClosed as exc:
            self.fatal = exc
            raise

    def _check_not_fatal(self) -> None:
        if self.fatal is not None:
            raise RuntimeError(
                "the turn loop already failed; nothing more is written"
            ) from self.fatal

    def _is_fatal(self) -> bool:
        return self.fatal is not None

    # -- the turn -------------------------------------------------------------------------------

    async def run(
        self,
        controller: TurnController,
        handoff: Callable[[TurnController, bool], None],
        ended: Callable[[TurnOutcome], None],
    ) -> None:
        """Run one turn under ``controller``.

        ``handoff(controller, aborted)`` is called after the turn's work has stopped and
        before ``turn/end`` is appended: the agent drops its reference to the controller
        there (K7). ``ended(outcome)`` is called right after ``turn/end`` is appended.
        Exceptions other than ordinary failures (a fatal append, an outer cancellation)
        propagate after that (``turn/end`` is still written when it can be).
        """
        turn = self._start_turn(controller)
        kind: OutcomeKind | None = None
        error: dict[str, str] | None = None
        try:
            with controller.scope:
                kind = await self._body(controller, turn)
        except BaseException as exc:
            if self.fatal is not None:
                raise  # the log is broken: nothing more may be written (K20)
            if not isinstance(exc, Exception):
                # Cancelled by something outside the turn (the agent's nursery is being torn
                # down), or an interrupt: the turn is stopped like a disposal (K19).
                controller.cancel(CancelCause.disposed())
                raise
            error = error_info(exc)
        finally:
            aborted = controller.cancel_called
            handoff(controller, aborted)
            ending: OutcomeKind = "aborted" if aborted else kind or "error"
            self._end_turn(controller, turn, ending, error, ended)
        if self.fatal is not None:  # refused somewhere, and the refusal was swallowed on the way
            raise self.fatal

    def _start_turn(self, controller: TurnController) -> int:
        """Bind the controller to the next turn and book its ``turn/start``."""
        turn = self.session.checker.last_turn + 1
        controller.bind(turn)
        self.append(*build.turn_start(turn))
        self.emit(TurnStarted(turn))
        return turn

    def _end_turn(
        self,
        controller: TurnController,
        turn: int,
        kind: OutcomeKind,
        error: dict[str, str] | None,
        ended: Callable[[TurnOutcome], None],
    ) -> None:
        """Book ``turn/end`` (synchronously: a cancelled scope cannot stop it) and report the
        outcome; nothing when the loop is fatal (K20)."""
        if self.fatal is not None:
            return
        booked = None
        if kind == "error":
            booked = error or {"code": "UNKNOWN", "message": "the turn failed"}
        self.append(*build.turn_end(turn, kind, booked))
        ended(TurnOutcome(turn, kind, controller.cause, error))

    async def _body(self, controller: TurnController, turn: int) -> OutcomeKind:
        view = controller.view
        inbox = self.session.inbox
        step = 0
        ends: OutcomeKind | None = None  # the last step's ending; None: a follow-up is owed
        cut_off = False  # a step stopped at max-tokens: the turn ends max-tokens (K12)
        target = "next-turn"
        while True:
            await trio.lowlevel.checkpoint_if_cancelled()
            batch = self._claim(target)
            ctx = TurnContext(turn, step + 1, view)
            decision = await self.hooks.pre_step(ctx, batch)
            await trio.lowlevel.checkpoint_if_cancelled()
            if isinstance(decision, Reject):
                return "blocked"
            messages = batch if decision is None else [_message(m) for m in decision]
            if not messages:
                if step == 0:
                    return "completed"  # nothing to enter: a turn with no step
                if ends is not None:
                    break
            step += 1
            self.append(*build.step_start(turn, step))
            try:
                for message in messages:
                    self.append(*build.user_message(turn, step, message))
                ends = await self._step(controller, ctx)
                cut_off = cut_off or ends == "max-tokens"
            finally:
                if self.fatal is None:
                    self.append(*build.step_end(turn, step))
            await trio.lowlevel.checkpoint_if_cancelled()
            if ends is not None and not inbox.next_step:
                await self.hooks.turn_stopping(ctx)
                await trio.lowlevel.checkpoint_if_cancelled()
                if not inbox.next_step:
                    break
            target = "next-step"
        assert ends is not None
        # Sticky only changes the reason: a later step's tool calls still earned their
        # follow-up step above (K12).
        return "max-tokens" if cut_off else ends

    def _claim(self, target: str) -> list[dict[str, Any]]:
        """Take every next-step item, then (for a new turn) one next-turn item (K12)."""
        inbox = self.session.inbox
        batch = [dict(m) for m in inbox.next_step]
        if batch:
            self.append(*build.inbox_claimed("next-step", len(batch)))
        if target == "next-turn" and inbox.next_turn:
            item = dict(inbox.next_turn[0])
            self.append(*build.inbox_claimed("next-turn", 1))
            batch.append(item)
        return batch

    # -- one model call -------------------------------------------------------------------------

    async def _step(self, controller: TurnController, ctx: TurnContext) -> OutcomeKind | None:
        """Prompt, stream, message, tools. Returns the step's turn ending, or ``None`` when
        the model called tools (it owes a follow-up step)."""
        request = await self._request(ctx)
        streamed = _Streamed(self.session.checker.call_id_used)
        await self._stream(controller, ctx, request, streamed)
        finish = streamed.finish
        if finish is not None and finish["reason"] == "error":
            # What the user saw is kept, as on a cancel (K14).
            self._rescue_interrupted(ctx, streamed.text)
            raise ModelError(finish["error"]["code"], finish["error"]["message"])
        max_tokens = finish is not None and finish["reason"] == "max-tokens"
        calls = [] if max_tokens else streamed.calls  # a cut-off answer's calls never run
        full = "".join(streamed.text)
        content: list[dict[str, Any]] = [{"type": "text", "text": full}] if full else []
        content.extend(calls)
        self.append(*build.assistant_message(ctx.turn, ctx.step, self._message_id(ctx), content))
        if max_tokens:
            return "max-tokens"
        if not calls:
            return "completed"
        await ToolStep(
            session=self.session,
            append=self.append,
            controller=controller,
            ctx=ctx,
            blocks=calls,
            tools=self.tools,
            approver=self.approver,
            is_fatal=self._is_fatal,
        ).run()
        return None

    async def _request(self, ctx: TurnContext) -> ModelRequest:
        """Prompt assembly, then the request over the transcript derived from the log."""
        system = await self.hooks.assemble_prompt(ctx)
        await trio.lowlevel.checkpoint_if_cancelled()
        self._transcript.catch_up(self.session.events)
        return ModelRequest(
            ctx.turn,
            ctx.step,
            system,
            tuple(self._transcript.messages),
            self._tool_names,
            self._tool_specs,
        )

    async def _stream(
        self,
        controller: TurnController,
        ctx: TurnContext,
        request: ModelRequest,
        streamed: _Streamed,
    ) -> None:
        """Append every chunk as it arrives, up to the first ``finish`` (K14), into
        ``streamed``. A cancel or a failure keeps the visible prefix
        (:meth:`_rescue_interrupted`)."""
        stream = self.model.stream(request, ctx)
        try:
            async for raw in stream:
                chunk = check_chunk(raw)
                await self.session.wait_writable()
                self._append_chunk(ctx.turn, ctx.step, chunk)
                if streamed.take(chunk):
                    break
            finish = streamed.finish
            if finish is None or finish["reason"] != "error":
                # A cancel that landed after the last chunk still interrupts (K14).
                await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException as exc:
            # A cancel, or a model that failed mid-stream (K14): the visible prefix is kept.
            failed = isinstance(exc, Exception)
            if (controller.cancel_called or failed) and self.fatal is None:
                self._rescue_interrupted(ctx, streamed.text)
            raise
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with trio.move_on_after(CLEANUP_BOUND, shield=True):
                    await aclose()

    def _rescue_interrupted(self, ctx: TurnContext, text: list[str]) -> None:
        """K14: a cancelled or failed stream's visible prefix becomes
        ``assistant/message{interrupted}``
        with one text block; tool-call blocks are dropped, and nothing is written when no
        visible text streamed."""
        prefix = "".join(text)
        if prefix.strip():
            self.append(
                *build.assistant_message(
                    ctx.turn,
                    ctx.step,
                    self._message_id(ctx),
                    [{"type": "text", "text": prefix}],
                    interrupted=True,
                )
            )

    @staticmethod
    def _message_id(ctx: TurnContext) -> str:
        return f"a-{ctx.turn}-{ctx.step}"
