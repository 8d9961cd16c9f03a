"""The HTTP side shared by the streaming adapters: POST a JSON body, read server-sent events,
within bounds (spec/models.md §Bounds, §Errors).

:class:`Limits` holds every bound; :func:`post_events` posts and yields the response's events.
It reads the body raw and inflates ``gzip``/``deflate`` itself, a bounded piece at a time, so
neither a long line, a huge event, an endless body nor a compression bomb can grow memory past
the bounds; the idle timeout restarts only when an *event* arrives (bytes, SSE comments and
keep-alive pings do not reset it). Every failure is raised as a
:class:`~trio_agent.models.base.ModelError` whose one-line message names the URL and what
arrived. The wire mappings are elsewhere (``openai_wire``, ``anthropic_wire``), pure.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from typing import Any, Final, Protocol, cast

import attrs
import httpx
import orjson
import trio

from .base import ModelError
from .sse import SSEDecoder, SSEEvent, TooLarge

__all__ = [
    "Assembler",
    "Limits",
    "error_finish",
    "list_models",
    "post_events",
    "stream_answer",
    "where",
]

#: Bytes of a ``GET /models`` answer read at most.
_MODELS_READ: Final = 1024 * 1024

#: Characters of an error response's text kept in the one-line message.
ERROR_TEXT_LIMIT: Final = 2000
#: Body bytes read (before and after inflating) to find that text.
_ERROR_BODY_READ: Final = 64 * 1024
#: Inflated bytes taken from the decompressor per call: the most it ever holds at once.
_INFLATE_STEP: Final = 64 * 1024

_MiB: Final = 1024 * 1024


def _positive_int(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or value < 1:
        raise ValueError(f"Limits.{attribute.name} must be an int >= 1, got {value!r}")


def _positive_number(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"Limits.{attribute.name} must be a number > 0, got {value!r}")


@attrs.frozen(kw_only=True)
class Limits:
    """The bounds of one adapter (spec/models.md §Bounds). Crossing any of them ends the step
    with ``LIMIT`` (``TIMEOUT`` for ``idle`` and ``connect``), naming the field to raise."""

    #: Bytes of one event-stream line.
    line: int = attrs.field(default=1 * _MiB, validator=_positive_int)
    #: Bytes of one event's data (its ``data:`` lines together).
    event: int = attrs.field(default=4 * _MiB, validator=_positive_int)
    #: Bytes of one response body, after inflating (the whole answer of one step).
    response: int = attrs.field(default=8 * _MiB, validator=_positive_int)
    #: Events of one response.
    events: int = attrs.field(default=100_000, validator=_positive_int)
    #: Tool calls in one answer.
    tool_calls: int = attrs.field(default=64, validator=_positive_int)
    #: Model calls (steps) in one turn; the next step fails without a request.
    steps: int = attrs.field(default=100, validator=_positive_int)
    #: Seconds without an event (headers included) before ``TIMEOUT``.
    idle: float = attrs.field(default=60.0, validator=_positive_number)
    #: Seconds to connect before ``TIMEOUT``.
    connect: float = attrs.field(default=30.0, validator=_positive_number)


def error_finish(code: str, message: str) -> dict[str, Any]:
    """The ``finish{error}`` chunk, its message on one line."""
    return {
        "type": "finish",
        "reason": "error",
        "error": {"code": code, "message": " ".join(message.split())},
    }


def where(exc: ModelError, url: str, decoder: SSEDecoder) -> str:
    """``exc``'s message, led by the URL (and, for a cut answer, what arrived), unless
    :func:`post_events` already put them there (spec/models.md §Errors)."""
    if exc.message.startswith(url):
        return exc.message
    if exc.code == "INCOMPLETE":
        return f"{url}: {exc.message} (so far: {decoder.describe()})"
    return f"{url}: {exc.message}"


class Assembler(Protocol):
    """What :func:`stream_answer` asks of a wire module's ``StreamAssembler``."""

    #: The finish reason, once it arrived (its chunk may wait for the end of the body).
    finish_reason: str | None
    #: The ``finish`` chunk was given: nothing after it is read.
    done: bool

    @property
    def finished(self) -> bool: ...

    def feed_event(self, event: SSEEvent) -> list[dict[str, Any]]: ...

    def end(self) -> list[dict[str, Any]]: ...


#: Failures that, after the finish reason arrived, lose nothing of the answer: only the
#: usage event, the end marker or the close were lost.
_AFTER_FINISH: Final = frozenset({"CONNECTION", "TIMEOUT", "INCOMPLETE", "BAD_STREAM"})


async def stream_answer(
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    limits: Limits,
    assembler: Assembler,
    *,
    step: int,
) -> AsyncIterator[dict[str, Any]]:
    """One model call of an adapter: the chunks ``assembler`` makes of the events of
    ``POST url``, ending with one ``finish`` chunk whatever happens (spec/models.md §Errors).

    Step ``step`` beyond ``limits.steps`` is refused before anything is sent. Once the
    ``finish`` chunk is given the response is closed (nothing after it is read); cancelling
    the caller closes it too, through the generator's ``aclose``.
    """
    if step > limits.steps:
        yield error_finish(
            "LIMIT", f"{url}: more than {limits.steps} model calls in one turn (Limits.steps)"
        )
        return
    decoder = SSEDecoder(max_line=limits.line, max_event=limits.event)
    try:
        events = post_events(url, body, headers, limits, decoder)
        async with contextlib.aclosing(events):
            async for sse in events:
                for chunk in assembler.feed_event(sse):
                    yield chunk
                if assembler.done:
                    return
        for chunk in assembler.end():
            yield chunk
    except ModelError as exc:
        if assembler.finished and not assembler.done and exc.code in _AFTER_FINISH:
            yield {"type": "finish", "reason": assembler.finish_reason}
            return
        yield error_finish(exc.code, where(exc, url, decoder))


class _Inflater:
    """Undo ``content-encoding`` (identity, gzip, deflate) a bounded piece at a time."""

    def __init__(self, encoding: str) -> None:
        encoding = encoding.strip().lower()
        self._z: Any = None
        if encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib or gzip header, as sent
        elif encoding not in ("", "identity"):
            raise ModelError("BAD_STREAM", f"an unsupported content-encoding {encoding!r}")

    def inflate(self, raw: bytes) -> Iterator[bytes]:
        """The inflated pieces of ``raw``, each at most :data:`_INFLATE_STEP` bytes, made one
        at a time as they are taken: the caller counts them and stops a bomb at its bound."""
        if self._z is None:
            yield raw
            return
        data = raw
        try:
            while True:
                out = self._z.decompress(data, _INFLATE_STEP)
                if out:
                    yield out
                data = self._z.unconsumed_tail
                if not data and len(out) < _INFLATE_STEP:
                    return
        except zlib.error as exc:
            raise ModelError(
                "BAD_STREAM", f"a compressed body that does not inflate: {exc}"
            ) from None


async def post_events(
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    limits: Limits,
    decoder: SSEDecoder,
    *,
    error_text: Any = None,
) -> AsyncGenerator[SSEEvent, None]:
    """POST ``body`` to ``url`` and yield the response's events, within ``limits``.

    ``decoder`` (made with ``limits.line`` and ``limits.event``) decodes the body; it counts
    what arrived, for the caller's own messages. ``error_text(parsed_json) -> str | None``
    picks the provider's message out of an error response's JSON (default: ``error.message``
    or a string ``error``). Raises
    :class:`ModelError` (``HTTP_<status>``, ``CONNECTION``, ``TIMEOUT``, ``LIMIT``,
    ``BAD_STREAM``). A clean end of the body simply ends the iteration; what it means is the
    wire mapping's call. Close it (``aclosing``) to close the connection.
    """
    timeout = httpx.Timeout(connect=limits.connect, read=None, write=limits.idle, pool=None)
    deadline = trio.current_time() + limits.idle
    # Sent explicitly: we inflate these two ourselves, bounded, and nothing else.
    all_headers = {"accept-encoding": "gzip, deflate", **headers}
    payload = orjson.dumps(body)
    try:
        client = httpx.AsyncClient(timeout=timeout)
        async with client:
            request = client.build_request("POST", url, content=payload, headers=all_headers)
            request.headers["content-type"] = "application/json"
            with trio.move_on_at(deadline) as waited:
                resp = await client.send(request, stream=True)
            if waited.cancelled_caught:
                raise ModelError("TIMEOUT", f"{url}: no response headers within {limits.idle:g}s")
            try:
                inflater = _Inflater(resp.headers.get("content-encoding", ""))
                if not 200 <= resp.status_code < 300:
                    text = await _error_text(resp, inflater, error_text)
                    raise ModelError(f"HTTP_{resp.status_code}", text)
                raw = cast(AsyncGenerator[bytes, None], resp.aiter_raw())
                async with contextlib.aclosing(raw):
                    inflated = 0
                    while True:
                        with trio.move_on_at(deadline) as waited:
                            piece = await anext(raw, None)
                        if waited.cancelled_caught:
                            raise ModelError(
                                "TIMEOUT",
                                f"{url}: no event for {limits.idle:g}s "
                                f"(so far: {decoder.describe()})",
                            )
                        if piece is None:
                            break
                        for part in inflater.inflate(piece):
                            inflated += len(part)
                            if inflated > limits.response:
                                raise TooLarge(
                                    f"a response larger than {limits.response} bytes "
                                    "(Limits.response)"
                                )
                            for event in decoder.feed(part):
                                if decoder.events > limits.events:
                                    raise TooLarge(
                                        f"more than {limits.events} events (Limits.events)"
                                    )
                                if event.event != "ping":  # a keep-alive is no answer
                                    deadline = trio.current_time() + limits.idle
                                yield event
                for event in decoder.close():
                    yield event
            finally:
                await resp.aclose()
    except TooLarge as exc:
        what = _with_setting(str(exc))
        raise ModelError("LIMIT", f"{url}: {what} (so far: {decoder.describe()})") from None
    except httpx.ConnectTimeout:
        raise ModelError(
            "TIMEOUT", f"{url}: could not connect within {limits.connect:g}s"
        ) from None
    except httpx.TimeoutException:
        raise ModelError("TIMEOUT", f"{url}: the request timed out") from None
    except httpx.TransportError as exc:
        what = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
        if decoder.bytes or decoder.events:
            what += f" (so far: {decoder.describe()})"
        raise ModelError("CONNECTION", f"{url}: {what}") from None


def _with_setting(text: str) -> str:
    """Name the :class:`Limits` field of a decoder bound, so the user knows what to raise."""
    if "line longer" in text:
        return f"{text} (Limits.line)"
    if "event larger" in text:
        return f"{text} (Limits.event)"
    return text


async def _error_text(resp: httpx.Response, inflater: _Inflater, pick: Any) -> str:
    """The provider's error text, on one line, with any ``retry-after``: at most
    :data:`_ERROR_BODY_READ` bytes are read and inflated, whatever the body claims."""
    raw_read = 0
    kept = bytearray()
    raw = cast(AsyncGenerator[bytes, None], resp.aiter_raw())
    async with contextlib.aclosing(raw):
        async for piece in raw:
            raw_read += len(piece)
            for part in inflater.inflate(piece):
                kept += part[: _ERROR_BODY_READ - len(kept)]
                if len(kept) >= _ERROR_BODY_READ:
                    break
            if len(kept) >= _ERROR_BODY_READ or raw_read >= _ERROR_BODY_READ:
                break
    text = bytes(kept).decode("utf-8", "replace")
    try:
        parsed = orjson.loads(kept)
        picked = (pick or _default_pick)(parsed)
        if picked:
            text = picked
    except ValueError:
        pass
    text = " ".join(text.split())[:ERROR_TEXT_LIMIT]
    reason = resp.reason_phrase or httpx.codes.get_reason_phrase(resp.status_code)
    message = f"{resp.request.url}: {resp.status_code} {reason}: {text}".strip().rstrip(":")
    retry = resp.headers.get("retry-after")
    if retry:
        message += f" (retry-after: {retry})"
    return message


def _default_pick(parsed: object) -> str | None:
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return None


async def list_models(url: str, headers: Mapping[str, str], limits: Limits) -> list[str] | None:
    """The model ids ``GET url`` lists (``{"data": [{"id": ...}, ...]}``, as OpenAI-compatible
    servers and Anthropic's API answer ``/models``), or ``None`` when the server has no such
    list (404, 405, 501, or an answer of another shape). Raises :class:`ModelError`
    (``HTTP_<status>``, ``CONNECTION``, ``TIMEOUT``, ``LIMIT``) when it cannot be asked; at
    most 1 MiB of the answer is read."""
    timeout = httpx.Timeout(connect=limits.connect, read=limits.idle, write=limits.idle, pool=None)
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            with trio.move_on_after(limits.idle) as waited:
                async with client.stream("GET", url, headers=dict(headers)) as resp:
                    if resp.status_code in (404, 405, 501):
                        return None
                    inflater = _Inflater(resp.headers.get("content-encoding", ""))
                    if not 200 <= resp.status_code < 300:
                        raise ModelError(
                            f"HTTP_{resp.status_code}", await _error_text(resp, inflater, None)
                        )
                    kept = bytearray()
                    raw = cast(AsyncGenerator[bytes, None], resp.aiter_raw())
                    async with contextlib.aclosing(raw):
                        async for piece in raw:
                            for part in inflater.inflate(piece):
                                kept += part
                                if len(kept) > _MODELS_READ:
                                    raise ModelError(
                                        "LIMIT", f"{url}: a model list over {_MODELS_READ} bytes"
                                    )
            if waited.cancelled_caught:
                raise ModelError("TIMEOUT", f"{url}: no model list within {limits.idle:g}s")
    except httpx.TimeoutException:
        raise ModelError("TIMEOUT", f"{url}: no model list within {limits.idle:g}s") from None
    except httpx.TransportError as exc:
        what = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
        raise ModelError("CONNECTION", f"{url}: {what}") from None
    try:
        parsed = orjson.loads(kept)
    except ValueError:
        return None
    data = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(data, list):
        return None
    return [m["id"] for m in data if isinstance(m, dict) and type(m.get("id")) is str]
