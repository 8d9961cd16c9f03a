"""``trio-agent run``: a tiny interactive agent on a real session, to feel Ctrl-C.

Each line typed on stdin is a follow-up; :class:`ShellModel` answers it by running the line
as a ``bash`` command (a real :class:`~trio_agent.tools.BashTool`, in its own process group)
and then reports the result. Each event of the session's log is printed once it is durable.
With ``--model URL`` it is a chat with a real model instead (:func:`connect`; spec/cli.md
§`trio-agent run`'s screen): the answer prints as text, tool events as lines.

Ctrl-C (spec/tools.md, "Ctrl-C"): tools run in their own session, so the terminal's SIGINT no
longer reaches them; the runtime turns it into ``cancel(user)`` for the running turn, which
stops the tool's whole process group. A Ctrl-C while idle, or a second one while a cancel is
still being delivered, shuts down gracefully (queued work is kept) and exits with 130.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import math
import os
import signal
import stat
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import attrs
import trio

from ..failures import exception_text
from ..files import file_kind, not_a_log
from ..log.envelope import Event
from ..log.render import describe, visible
from ..log.repair import REAPED_TEXTS
from ..models.base import ModelRequest, StepContext
from ..procs import reap_orphans
from ..runtime import (
    AgentError,
    CancelCause,
    Hooks,
    TurnContext,
    TurnEnded,
    TurnPrevented,
    open_agent,
)
from ..stop_signals import stop_receiver
from ..store import (
    JsonlStore,
    Session,
    SessionFenced,
    SessionNotFound,
    StoreError,
    WriteFailed,
    repair_file,
)
from ..tools.subprocess_tool import BashTool
from .dsn import is_dsn, redact
from .errors import INTERRUPTED, REFUSED, UNREADABLE, CliError, plural
from .inputs import store_where, usage_error
from .repair_write import REAPED_NOTES, cannot_write, session_errors

if TYPE_CHECKING:
    from ..store import PostgresStore


class ShellModel:
    """Runs the user's text as a bash command, then summarises the tool's result.

    Deterministic and offline like ``ScriptedModel``, but driven by what was typed.
    """

    def __init__(self, chunk_delay: float = 0.0) -> None:
        self.chunk_delay = chunk_delay

    async def stream(
        self, request: ModelRequest, ctx: StepContext
    ) -> AsyncIterator[Mapping[str, Any]]:
        last = request.messages[-1] if request.messages else None
        if last is not None and last["role"] == "user":
            command = last["text"]
            for piece in ("Running ", f"`{command}`", " in bash."):
                await trio.sleep(self.chunk_delay)
                yield {"type": "text-delta", "text": piece}
            call = {"command": command}
            call_id = f"call-{ctx.turn}-{ctx.step}"
            yield {"type": "tool-call", "id": call_id, "name": "bash", "arguments": call}
            yield {"type": "finish", "reason": "tool-calls"}
            return
        await trio.sleep(self.chunk_delay)
        if last is not None and last["role"] == "tool":
            verdict = "failed" if last["isError"] else "finished"
            yield {"type": "text-delta", "text": f"The command {verdict}."}
        else:
            yield {"type": "text-delta", "text": "Nothing to do."}
        yield {"type": "finish", "reason": "stop"}


def _cause(cause: CancelCause) -> str:
    """A cancel cause by name: ``user``, ``hook: <reason>``."""
    return cause.kind if cause.reason is None else f"{cause.kind}: {cause.reason}"


def prepare_root(root: Path) -> None:
    """Make ``--root`` a usable directory, or raise a one-line :class:`CliError` (exit 2).

    A missing root is created, one level only (``./sessions`` by default); a root whose
    parent is missing is more likely a typo than a wish for a new tree.
    """
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        try:
            os.mkdir(root)
        except FileNotFoundError:
            raise CliError(
                f"{root}: cannot create the --root directory: {root.parent} does not exist",
                UNREADABLE,
            ) from None
        except OSError as exc:
            raise CliError(
                f"{root}: cannot create the --root directory: {exc.strerror or exc}", UNREADABLE
            ) from None
        return
    except OSError as exc:
        raise CliError(f"{root}: cannot use as --root: {exc.strerror or exc}", UNREADABLE) from None
    if not stat.S_ISDIR(mode):
        raise CliError(f"{root}: --root is not a directory", UNREADABLE)
    if not os.access(root, os.W_OK | os.X_OK):
        raise CliError(
            f"{root}: --root is not writable (a session needs to create its log there)",
            UNREADABLE,
        )


def _refuse_special(path: Path) -> None:
    """A log path that is not a regular file (a FIFO would block the first read forever; a
    link is never followed by the store) is one line, exit 2, before the store opens it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CliError(f"{path}: cannot use: {exc.strerror or exc}", UNREADABLE) from None
    kind = file_kind(mode)
    if kind is not None:
        raise CliError(not_a_log(path, kind), UNREADABLE)


def _closer_words(event: Event) -> str:
    """A closer in a few words: ``placeholder for call X``, ``step/end``,
    ``turn/end{interrupted}``."""
    if event.type == "tool/result":
        return f"placeholder for call {event.data['callId']}"
    if event.type == "turn/end":
        return f"turn/end{{{event.data['reason']['kind']}}}"
    return event.type


def _pgid_of(events: Sequence[Event], before: int, call_id: str) -> int | None:
    """The process group the log recorded for ``call_id`` (its ``tool/spawned``), looked for
    back from ``before`` to the start of the turn."""
    for i in range(before - 1, -1, -1):  # by index: a slice of a long log would copy it
        event = events[i]
        if event.type == "tool/spawned" and event.data["callId"] == call_id:
            pgid: int = event.data["pgid"]
            return pgid
        if event.type == "turn/start":
            return None
    return None


def repair_summary(
    events: Sequence[Event], kept: int, *, torn_bytes: int = 0, dropped_lines: int = 0
) -> str | None:
    """What the cold open did, in one line (``None`` when it did nothing): the closers it
    appended (events from ``kept`` on), the orphaned process groups it stopped (a
    placeholder that says so, spec/recovery.md R4) and the torn tail it cut. E.g.
    ``repaired: placeholder for call c1, step/end, turn/end{interrupted}; stopped orphan
    group 4242``."""
    closers = events[kept:]
    parts = []
    if closers:
        parts.append(", ".join(_closer_words(e) for e in closers))
    for event in closers:
        if event.type != "tool/result":
            continue
        call_id, content = event.data["callId"], event.data["content"]
        kind = next((k for k, text in REAPED_TEXTS.items() if content.endswith(text)), None)
        if kind == "stopped":
            pgid = _pgid_of(events, kept, call_id)
            group = "" if pgid is None else f" {pgid}"
            parts.append(f"stopped orphan group{group} (call {call_id})")
        elif kind is not None:
            parts.append(f"call {call_id}: {REAPED_NOTES[kind]}")
    if torn_bytes:
        lines = f", {plural(dropped_lines, 'uncommitted line')}" if dropped_lines else ""
        parts.append(f"cut a torn tail of {plural(torn_bytes, 'byte')}{lines}")
    return "repaired: " + "; ".join(parts) if parts else None


async def _open_or_create(store: JsonlStore, session_id: str, err: TextIO) -> Session:
    """The session, resumed (cold open: repaired first) or created; store errors become one
    line each (``trio-agent run --help`` lists the exit codes)."""
    path = store.path_of(session_id)
    # One line, whatever the root's name holds (spec/cli.md §stderr: errors and notes).
    shown = visible(str(path))
    _refuse_special(path)
    with session_errors(str(path)):
        try:
            # What the cold open will do, read first without changing anything, so the
            # banner can say what it repaired.
            before = await repair_file(path, write=False)
        except SessionNotFound:
            session = await store.create(session_id)
            print(f"trio-agent run: session {session_id!r} (new), log {shown}", file=err)
            return session
        session = await store.open(session_id)
    kept = before.events - len(before.closers)
    summary = repair_summary(
        session.events, kept, torn_bytes=before.torn_bytes, dropped_lines=before.dropped_lines
    )
    _print_resumed(session, f"log {shown}", kept, summary, err)
    return session


async def _open_or_create_stored(store: PostgresStore, session_id: str, err: TextIO) -> Session:
    """As :func:`_open_or_create`, for a session in a database (``--store DSN``): resumed
    (the lease taken over, the cold open's repair fenced by the new token) or created."""
    where = store_where(session_id)
    shown = redact(store.dsn)
    with session_errors(where, dsn=store.dsn):
        try:
            before = await store.read_log(session_id)
        except SessionNotFound:
            session = await store.create(session_id)
            print(f"trio-agent run: session {session_id!r} (new), in {shown}", file=err)
            return session
        from ..store.recovery import cold_scan

        kept = len(cold_scan(before.data, where, session_id).events)
        session = await store.open(session_id)
    _print_resumed(session, f"in {shown}", kept, repair_summary(session.events, kept), err)
    return session


def _print_resumed(
    session: Session, where: str, kept: int, summary: str | None, err: TextIO
) -> None:
    """The banner of a resumed session: its size, where it lives, and what the cold open
    repaired, said once: the ``summary`` names the closers it appended after the ``kept``
    events it read (``trio-agent show`` prints them one by one)."""
    events, turns = plural(len(session.events), "event"), plural(session.checker.last_turn, "turn")
    print(f"trio-agent run: session {session.id!r} (resumed: {events}, {turns}), {where}", file=err)
    if summary is not None:
        print(f"  {summary}", file=err)
    elif len(session.events) > kept:  # closers the summary could not name (none known today)
        print(f"  repaired: {plural(len(session.events) - kept, 'closing event')}", file=err)


async def _read_lines(send: trio.MemorySendChannel[str]) -> None:
    stream = trio.lowlevel.FdStream(os.dup(0))
    buffer = b""
    async with send, stream:
        while True:
            data = await stream.receive_some()
            if not data:
                break
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                await send.send(line.decode(errors="replace"))
        if buffer.strip():
            await send.send(buffer.decode(errors="replace"))


#: The events a chat shows as lines (the rest: the answer's text, or nothing).
_CHAT_SHOWN = frozenset(
    {"tool/call", "tool/spawned", "tool/output", "tool/result", "approval/asked",
     "approval/decided"}
)  # fmt: skip


def _print_recent(session: Session, err: TextIO, turns: int = 3) -> None:
    """A resumed chat shows its last ``turns`` turns: what was asked and answered."""
    if session.checker.last_turn == 0:
        return
    first = max(1, session.checker.last_turn - turns + 1)
    print(f"  the last {plural(session.checker.last_turn - first + 1, 'turn')}:", file=err)
    for event in session.events:
        data = event.data
        if data.get("turn", 0) < first:
            continue
        if event.type == "user/message":
            print(f"  you: {_short(data['message']['text'])}", file=err)
        elif event.type == "assistant/message":
            text = "".join(b.get("text", "") for b in data["message"]["content"])
            ran = [b["name"] for b in data["message"]["content"] if b["type"] == "tool-call"]
            said = _short(text) + (f" (ran {', '.join(ran)})" if ran else "")
            cut = " [interrupted]" if data.get("interrupted") else ""
            print(f"  model: {said.strip()}{cut}", file=err)


def _short(text: str, limit: int = 200) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


class _DurablePrinter:
    """Prints each event of the session once it is durable, never before: a line on the
    screen is a line that survives a kill -9 (an event only appended may still be lost).

    The observer only queues; a task waits for the disk (``Session.flush``) and prints. A
    closed stdout (``| head``) raises out of :meth:`run`, which ends the run (exit 141); a
    write that fails (a full disk) ends it too, through ``stop``.
    """

    def __init__(self, session: Session, out: TextIO, err: TextIO, *, chat: bool = False) -> None:
        self._session = session
        self._out = out
        self._err = err
        #: With a real model: the answer as plain text, the tools' events as lines.
        self._chat = chat
        self._mid_line = False  # streamed text not yet ended by a newline
        #: The first write failure: the run stops at it (``stop``) and reports it in one line.
        self.write_failure: WriteFailed | None = None
        self.stop: Callable[[], None] = lambda: None
        self._pending: collections.deque[Event] = collections.deque()
        self._wake, self._woken = trio.open_memory_channel[None](math.inf)

    def appended(self, event: Event) -> None:
        self._pending.append(event)
        self._wake.send_nowait(None)

    def print_pending(self) -> None:
        """Print what is queued (the caller knows it is durable); synchronous, so a cancel
        cannot stop it halfway through."""
        while self._pending:
            event = self._pending.popleft()
            if self._chat:
                self._print_chat(event)
            else:
                print(f"[{event.seq}] {describe(event)}", file=self._out)
        self._out.flush()

    def _print_chat(self, event: Event) -> None:
        """The answer's text as it streamed; tool events and the turn's end as whole lines
        (an error is printed whole, on stderr, by the reporter)."""
        if event.type == "assistant/chunk":
            chunk = event.data["chunk"]
            if chunk["type"] == "text-delta" and chunk["text"]:
                self._out.write(chunk["text"])
                self._mid_line = not chunk["text"].endswith("\n")
            return
        if event.type not in _CHAT_SHOWN and event.type != "turn/end":
            return
        if self._mid_line:  # the answer's text ends here
            self._out.write("\n")
            self._mid_line = False
        if event.type in _CHAT_SHOWN:
            print(f"[{event.seq}] {describe(event, full=True)}", file=self._out)

    async def run(self) -> None:
        async for _ in self._woken:
            if not self._pending:
                continue
            try:
                await self._session.flush()  # all appended so far, and meanwhile, are durable
            except WriteFailed as exc:
                # Nothing typed from now on could be made durable: the run stops, and its
                # last line says why (spec/cli.md, exit 2), once.
                self.write_failure = exc
                self.stop()
                return
            except SessionFenced:  # another owner has the session: nothing more is durable
                self._pending.clear()
                return
            self.print_pending()


#: What a real model is told when ``--model`` is given.
SYSTEM_PROMPT = (
    "You are a terminal assistant. You have one tool, bash: it runs a command line with "
    "bash -c in its own process group and answers with what it printed and its exit status. "
    "The user may cancel a running command at any moment."
)


class _SystemPrompt(Hooks):
    async def assemble_prompt(self, ctx: TurnContext) -> str:
        return SYSTEM_PROMPT


@attrs.frozen
class Connected:
    """The model ``run --model`` talks to: the adapter, and what the banner says of it."""

    model: Any
    name: str
    api: str
    url: str


def _api_of(args: argparse.Namespace) -> str:
    """``--api``, or chosen from the URL: ``anthropic`` for an anthropic.com host."""
    if args.api is not None:
        return str(args.api)
    host = urllib.parse.urlsplit(args.model).hostname or ""
    return "anthropic" if host == "anthropic.com" or host.endswith(".anthropic.com") else "openai"


def _key(args: argparse.Namespace, api: str) -> str:
    """The API key from ``--api-key-env NAME`` (which must be set), else from the API's usual
    variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``; unset: no key, as local servers
    need none)."""
    name = args.api_key_env or ("ANTHROPIC_API_KEY" if api == "anthropic" else "OPENAI_API_KEY")
    value = os.environ.get(name)
    if args.api_key_env is not None and not value:
        raise CliError(f"trio-agent run: --api-key-env {name}: ${name} is not set", UNREADABLE)
    return value or ""


async def connect(args: argparse.Namespace) -> Connected:
    """The adapter for ``--model URL``, its model name checked against the server's model
    list (``GET <URL>/models``) where it has one, and taken from it when it lists exactly
    one and ``--model-name`` is not given (spec/cli.md §`trio-agent run`'s screen). A model
    that cannot be used is one line and exit 2."""
    from ..models import AnthropicModel, Limits, ModelError, OpenAIChatModel
    from ..models.http import list_models

    api = _api_of(args)
    key = _key(args, api)
    base = args.model.rstrip("/")
    headers = (
        {"x-api-key": key, "anthropic-version": "2023-06-01"}
        if api == "anthropic"
        else ({"authorization": f"Bearer {key}"} if key else {})
    )
    try:
        listed = await list_models(f"{base}/models", headers, Limits(idle=30.0, connect=10.0))
    except ModelError as exc:
        raise CliError(
            f"trio-agent run: --model {args.model}: cannot reach the server: {exc.message}",
            UNREADABLE,
        ) from None
    name = args.model_name
    if name is None:
        if listed is not None and len(listed) == 1:
            name = listed[0]
        elif listed:
            shown = ", ".join(listed[:10]) + (", ..." if len(listed) > 10 else "")
            raise CliError(
                f"trio-agent run: --model {args.model} serves {len(listed)} models; "
                f"choose one with --model-name ({shown})",
                UNREADABLE,
            )
        else:
            has = "lists no model" if listed is not None else "has no model list (GET /models)"
            raise CliError(
                f"trio-agent run: --model {args.model} {has}; give --model-name", UNREADABLE
            )
    elif listed is not None and name not in listed:
        shown = ", ".join(listed[:10]) + (", ..." if len(listed) > 10 else "") or "none"
        raise CliError(
            f"trio-agent run: --model-name {name!r} is not served by {args.model} "
            f"(it lists: {shown})",
            UNREADABLE,
        )
    if api == "anthropic":
        choice = None if args.tool_choice is None else {"type": _ANTHROPIC_CHOICE[args.tool_choice]}
        model: Any = AnthropicModel(base, name, api_key=key, tool_choice=choice)
        url = model.url
    else:
        model = OpenAIChatModel(base, name, api_key=key, tool_choice=args.tool_choice or "auto")
        url = model.url
    return Connected(model, name, api, url)


#: ``--tool-choice`` in the Messages API's words.
_ANTHROPIC_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


def _model(connected: Connected | None) -> Any:
    """The embedded bash-echo model, or the one ``--model`` connected to."""
    return ShellModel() if connected is None else connected.model


def _hooks(args: argparse.Namespace) -> Hooks | None:
    return _SystemPrompt() if getattr(args, "model", None) is not None else None


#: The options of a chat with a model server (``--model``), by their ``args`` names.
_CHAT_OPTIONS: Final = {
    "model_name": "--model-name",
    "api": "--api",
    "api_key_env": "--api-key-env",
    "tool_choice": "--tool-choice",
}


def _check_usage(args: argparse.Namespace) -> None:
    """The usage errors argparse cannot see, before any request or file (spec/cli.md
    §Sessions in a database, §`trio-agent run`'s screen): both ``--root`` and ``--store``;
    an option of the chat without ``--model``, which the embedded model would silently
    ignore (``run --api anthropic`` is not a chat)."""
    if args.store is not None and args.root is not None:
        raise usage_error("run", "give either --root DIR or --store STORE, not both")
    if args.model is None:
        for name, flag in _CHAT_OPTIONS.items():
            if getattr(args, name) is not None:
                raise usage_error(
                    "run", f"{flag} needs --model URL (the embedded bash-echo model takes none)"
                )


def _make_store(args: argparse.Namespace) -> JsonlStore | PostgresStore:
    """``--store DSN``: the database store; else the JSONL store at ``--root`` (or at a
    ``--store`` that is a directory), made usable first."""
    if args.store is not None and is_dsn(args.store):
        from ..store import PostgresStore

        return PostgresStore(args.store, reap_orphans=reap_orphans)
    root = Path(args.store or args.root or "sessions")
    prepare_root(root)
    return JsonlStore(root, reap_orphans=reap_orphans)


async def _enter(stack: contextlib.AsyncExitStack, store: JsonlStore | PostgresStore) -> None:
    """Enter the store; a database that cannot be reached (or a bad DSN) is one line."""
    try:
        await stack.enter_async_context(store)
    except StoreError as exc:
        where = redact(store.dsn) if not isinstance(store, JsonlStore) else str(store.root)
        raise CliError(f"{where}: cannot use the store: {exc}", UNREADABLE) from None


async def run_interactive(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    _check_usage(args)
    connected = await connect(args) if args.model is not None else None
    store = _make_store(args)
    with stop_receiver() as interrupts:
        async with contextlib.AsyncExitStack() as stack:
            stack.enter_context(_logs_in_one_line(err))
            await _enter(stack, store)
            if isinstance(store, JsonlStore):
                session = await _open_or_create(store, args.session, err)
            else:
                session = await _open_or_create_stored(store, args.session, err)
            if connected is None:
                banner = (
                    "Type a shell command and press Enter to run it in bash. Ctrl-C cancels "
                    "the running command; Ctrl-C when idle, or Ctrl-D, quits."
                )
            else:
                _print_recent(session, err)
                banner = (
                    f"Talking to {connected.name} at {connected.url} ({connected.api} API), "
                    "with one tool: bash. Type a message and press Enter. Ctrl-C cancels the "
                    "answer or the running command; Ctrl-C when idle, or Ctrl-D, quits."
                )
            print(banner, file=err, flush=True)

            printer = _DurablePrinter(session, out, err, chat=connected is not None)
            unsubscribe = session.subscribe(printer.appended)
            lost: SessionFenced | WriteFailed | None = None
            try:
                exit_code = await _run_agent(args, connected, session, printer, interrupts, err)
            except (SessionFenced, WriteFailed) as exc:  # the final flush of leaving the agent
                lost = exc
            finally:
                unsubscribe()
                try:
                    await session.aclose()
                except (SessionFenced, WriteFailed) as exc:
                    lost = lost or exc
            lost = lost or printer.write_failure
            if isinstance(lost, WriteFailed):  # a full disk: one line, not an internal error
                where = (
                    str(store.path_of(args.session))
                    if isinstance(store, JsonlStore)
                    else store_where(args.session)
                )
                fate = f"this run stopped and {plural(lost.queued, 'event')} not written are lost"
                raise CliError(cannot_write(where, lost, fate), UNREADABLE)
            if lost is not None:  # what was not durable then never will be: not printed
                raise CliError(f"{store_where(args.session)}: {lost}; this run stopped", REFUSED)
            printer.print_pending()  # every event is durable once the session is closed
    return exit_code


@contextlib.contextmanager
def _logs_in_one_line(err: TextIO) -> Iterator[None]:
    """While ``run`` runs, the library's log records print as one line each, never with a
    traceback; the writer's "write failed" warning is left out, as the run's last line says
    it (spec/cli.md)."""
    handler = logging.StreamHandler(err)
    handler.setFormatter(_OneLine())
    handler.addFilter(lambda record: record.name != "trio_agent.store.writer")
    logger = logging.getLogger("trio_agent")
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _OneLine(logging.Formatter):
    """``trio-agent run: `` and the record's message; of its exception only the type and
    text; all on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            line = f"{line}: {exception_text(record.exc_info[1])}"
        return "trio-agent run: " + " ".join(line.split())


def _reporter(err: TextIO, stop: trio.CancelScope) -> Callable[[object], None]:
    """The runtime-event listener of ``run``: one line per cancel, failure and agent error;
    losing the session to another owner (``SessionFenced``) ends the run (``stop``)."""

    def report(ev: object) -> None:
        if isinstance(ev, TurnEnded) and ev.outcome.cause is not None:
            print(f"(turn {ev.outcome.turn}: cancelled by {_cause(ev.outcome.cause)})", file=err)
        elif isinstance(ev, TurnEnded) and ev.outcome.error is not None:
            error = ev.outcome.error  # a model server's words: one line, whatever they hold
            what = visible(f"{error['code']}: {error['message']}")
            print(f"(turn {ev.outcome.turn} failed: {what})", file=err)
        elif isinstance(ev, TurnPrevented):
            print(f"(no turn started: cancelled by {_cause(ev.cause)})", file=err)
        elif isinstance(ev, AgentError) and isinstance(ev.exception, WriteFailed):
            stop.cancel()  # a full disk: the run's last line reports it, once
        elif isinstance(ev, AgentError):
            print(f"({visible(ev.message)})", file=err)
            if isinstance(ev.exception, SessionFenced):
                stop.cancel()  # this run is over: the session is someone else's

    return report


async def _run_agent(
    args: argparse.Namespace,
    connected: Connected | None,
    session: Session,
    printer: _DurablePrinter,
    interrupts: AsyncIterator[int],
    err: TextIO,
) -> int:
    """The agent on ``session`` until stdin ends (0), Ctrl-C while idle (130), or SIGTERM
    or SIGHUP (128 + the signal's number)."""
    exit_code = 0
    async with (
        open_agent(
            session, model=_model(connected), tools=[BashTool()], hooks=_hooks(args)
        ) as agent,
        trio.open_nursery() as nursery,
    ):
        agent.subscribe(_reporter(err, nursery.cancel_scope))
        printer.stop = nursery.cancel_scope.cancel
        nursery.start_soon(printer.run)
        lines_send, lines = trio.open_memory_channel[str](0)
        nursery.start_soon(_read_lines, lines_send)

        async def watch_interrupts() -> None:
            nonlocal exit_code
            async for signum in interrupts:
                if signum != signal.SIGINT:
                    # SIGTERM, SIGHUP: leave as a second Ctrl-C does. Leaving the agent
                    # disposes of it: a running turn is cancelled (cause `disposed`) and ends
                    # `aborted`, its tools stopped, before the session closes balanced.
                    exit_code = 128 + signum
                    nursery.cancel_scope.cancel()
                    return
                controller = agent.controller
                if controller is None or controller.cancel_called:
                    # Idle, or a cancel is already on its way: leave, gracefully.
                    exit_code = INTERRUPTED
                    nursery.cancel_scope.cancel()
                    return
                agent.cancel(CancelCause.user())
                print("(cancel requested; Ctrl-C again to quit)", file=err)

        nursery.start_soon(watch_interrupts)
        async for line in lines:
            if agent.lost is not None:
                break
            if line.strip():
                agent.followup(line)
        await agent.wait_idle()
        nursery.cancel_scope.cancel()
    return exit_code


def main_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return trio.run(run_interactive, args, out, err)


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trio-agent run``: the interactive agent (spec/cli.md §`trio-agent run`'s screen)."""
    return main_run(args, out, err)
