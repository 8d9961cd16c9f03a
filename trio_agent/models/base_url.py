"""The ``base_url`` an HTTP adapter is given, checked before anything is sent (spec/models.md
§OpenAIChatModel, §AnthropicModel).

A URL that is not one would fail in the HTTP client, later and in its own words; a password
in it would be printed in every error message that names the URL, and an error message is
written into the session's log (a ``turn/end`` with ``reason.kind: error``). Pure: no I/O.
"""

from __future__ import annotations

import urllib.parse

__all__ = ["check_base_url"]


def check_base_url(url: str) -> str:
    """``url`` without its trailing ``/``, if it is an ``http://`` or ``https://`` URL with a
    host, a valid port, no query or fragment, no user or password, and no control character
    or space; otherwise ``ValueError`` saying which."""
    if not url.isprintable() or any(ch.isspace() for ch in url):
        raise ValueError(f"{url!r} holds a control character or a space")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError(f"{url!r} names no host")
    if parts.query or parts.fragment:
        raise ValueError(  # without the URL: a query may hold a key
            f"{parts.scheme}://{parts.hostname}...: a base URL has no query or fragment (the "
            "adapter appends /chat/completions or /messages to it)"
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError(  # without the URL: it holds the secret
            f"{parts.scheme}://{parts.hostname}...: put no user or password in the URL (every "
            "error message names the URL, and a session's log keeps them); give a key as an "
            "API key instead (api_key=, or run's --api-key-env)"
        )
    return url.rstrip("/")
