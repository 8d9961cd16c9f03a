"""The ``base_url`` an HTTP adapter takes (spec/models.md §OpenAIChatModel, §AnthropicModel):
checked before anything is sent, so a malformed one is a clear ``ValueError`` and a password
never reaches an error message, which a session's log would keep."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, strategies as st

from trio_agent.models import AnthropicModel, OpenAIChatModel
from trio_agent.models.base_url import check_base_url


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1"),
        ("https://api.example.com/v1", "https://api.example.com/v1"),
        ("HTTP://[::1]:65535", "HTTP://[::1]:65535"),
        ("http://localhost", "http://localhost"),
    ],
)
def test_a_url_the_adapters_take(url: str, kept: str) -> None:
    assert check_base_url(url) == kept


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://[::1", "is not a URL: Invalid IPv6 URL"),
        ("http://127.0.0.1:99999/v1", "is not a URL: Port out of range"),
        ("ftp://example.com/v1", "is not an http:// or https:// URL"),
        ("127.0.0.1:8080/v1", "is not an http:// or https:// URL"),
        ("", "is not an http:// or https:// URL"),
        ("http:///v1", "names no host"),
        ("http://127.0.0.1/\x1b[2J", "holds a control character or a space"),
        ("http://127.0.0.1/a b", "holds a control character or a space"),
        ("http://user@127.0.0.1/v1", "put no user or password in the URL"),
        ("http://127.0.0.1/v1?key=abc", "a base URL has no query or fragment"),
        ("http://127.0.0.1/v1#x", "a base URL has no query or fragment"),
    ],
)
def test_a_url_they_refuse_and_why(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        check_base_url(url)
    for adapter in (OpenAIChatModel, AnthropicModel):
        with pytest.raises(ValueError, match=says):
            adapter(url, "m")


def _refusal(url: str) -> str:
    with pytest.raises(ValueError) as info:
        check_base_url(url)
    return str(info.value)


@given(st.text(string.ascii_letters + string.digits + "-._~!$&'()*+,;=%"))
def test_a_password_is_never_in_the_message(password: str) -> None:
    # The same words whatever the user and password: nothing of them can be in it.
    message = _refusal(f"https://me:{password}@api.example.com/v1")
    assert message == _refusal("https://someone:x@api.example.com/v2")
    assert message.startswith("https://api.example.com...: put no user or password")
    query = _refusal(f"https://api.example.com/v1?key={password}")
    assert query == _refusal("https://api.example.com/v2?x")
