"""``OpenAIChatModel``: an OpenAI-compatible Chat Completions endpoint, streamed (spec/models.md).

One adapter for OpenAI, DeepSeek, vLLM, llama.cpp's server, Ollama and LM Studio: ``POST
{base_url}/chat/completions`` with ``stream: true``, read as server-sent events. HTTP is
httpx (it runs on trio through anyio), SSE parsing is httpx-sse (notes/2026-12-03-http-model.md);
the mapping both ways is the pure :mod:`trio_agent.models.openai_wire`.

Cancel closes the socket: the stream is an async generator whose ``finally`` closes the
response and the client, and the turn loop closes the generator (shielded, bounded) when the
turn is cancelled (spec/cancel.md K14), so no connection is left draining in the background.
Every failure ends the step with ``finish{error}`` and a one-line message; retrying is not
the adapter's job (a hook may do it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import httpx_sse
import orjson

from .base import ModelError, ModelRequest, StepContext
from .openai_wire import StreamAssembler, request_body

__all__ = ["OpenAIChatModel"]

#: How much of an error response's body goes into the one-line message.
_ERROR_BODY_LIMIT = 2000


class OpenAIChatModel:
    """Stream chunks from an OpenAI-compatible ``/chat/completions`` endpoint.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (sent as ``Authorization: Bearer``; none if
    unset, as local servers need none). ``timeout`` bounds connecting and each wait for the
    next byte, in seconds (``TIMEOUT`` when it runs out).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._headers = {"accept": "text/event-stream", **(headers or {})}
        if key:
            self._headers["authorization"] = f"Bearer {key}"
        self._timeout = timeout
        self._max_tokens = max_tokens
        self._extra_body = dict(extra_body or {})

    def stream(self, request: ModelRequest, ctx: StepContext) -> AsyncIterator[Mapping[str, Any]]:
        return self._stream(request, f"call-{ctx.turn}-{ctx.step}")

    async def _stream(self, request: ModelRequest, id_prefix: str) -> AsyncIterator[dict[str, Any]]:
        body = request_body(
            request, self.model, max_tokens=self._max_tokens, extra_body=self._extra_body
        )
        url = f"{self.base_url}/chat/completions"
        assembler = StreamAssembler(id_prefix)
        try:
            client = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout))
            async with client, client.stream("POST", url, json=body, headers=self._headers) as resp:
                if not 200 <= resp.status_code < 300:
                    raise ModelError(f"HTTP_{resp.status_code}", await _error_text(resp))
                # Read to the end of the body even after [DONE] (the provider ends it
                # right there), so httpx's own iterators finish rather than dangle.
                events = httpx_sse.EventSource(resp).aiter_sse()
                async with contextlib.aclosing(events):
                    async for sse in events:
                        for chunk in assembler.feed(sse.data):
                            yield chunk
                for chunk in assembler.end():
                    yield chunk
        except ModelError as exc:
            yield _error_finish(exc.code, exc.message)
        except httpx.TimeoutException:
            yield _error_finish("TIMEOUT", f"no answer from {url} within {self._timeout:g}s")
        except (httpx.TransportError, httpx_sse.SSEError) as exc:
            yield _error_finish("CONNECTION", f"{url}: {type(exc).__name__}: {exc}".strip())


def _error_finish(code: str, message: str) -> dict[str, Any]:
    return {
        "type": "finish",
        "reason": "error",
        "error": {"code": code, "message": " ".join(message.split())},
    }


async def _error_text(resp: httpx.Response) -> str:
    """The provider's error text, on one line, with any ``retry-after``."""
    raw = b""
    async for part in resp.aiter_bytes():
        raw += part
        if len(raw) > _ERROR_BODY_LIMIT:
            break
    text = raw[:_ERROR_BODY_LIMIT].decode("utf-8", "replace")
    try:
        parsed = orjson.loads(raw)
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    except ValueError:
        pass
    reason = resp.reason_phrase or httpx.codes.get_reason_phrase(resp.status_code)
    message = f"{resp.status_code} {reason}: {text}".strip()
    retry = resp.headers.get("retry-after")
    if retry:
        message += f" (retry-after: {retry})"
    return message
