"""Models: the model protocol, the deterministic scripted model (the embedded default), and
the HTTP adapters ``OpenAIChatModel`` and ``AnthropicModel`` with their ``Limits``
(spec/models.md). The adapters import httpx, so they load on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Model, ModelError, ModelRequest, StepContext, Transcript, check_chunk
from .scripted import DEFAULT_FINAL_TEXT, ScriptedModel, split_text

if TYPE_CHECKING:
    from .anthropic import AnthropicModel
    from .http import Limits
    from .openai import OpenAIChatModel

__all__ = [
    "DEFAULT_FINAL_TEXT",
    "AnthropicModel",
    "Limits",
    "Model",
    "ModelError",
    "ModelRequest",
    "OpenAIChatModel",
    "ScriptedModel",
    "StepContext",
    "Transcript",
    "check_chunk",
    "split_text",
]

_LAZY = {"AnthropicModel": ".anthropic", "Limits": ".http", "OpenAIChatModel": ".openai"}


def __getattr__(name: str) -> Any:
    """Load an HTTP adapter on first use (httpx is not imported by ``import trio_agent``)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
