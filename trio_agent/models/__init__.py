"""Models: the model protocol and the deterministic scripted model (the embedded default)."""

from .base import Model, ModelError, ModelRequest, StepContext, Transcript, check_chunk
from .scripted import DEFAULT_FINAL_TEXT, ScriptedModel, split_text

__all__ = [
    "DEFAULT_FINAL_TEXT",
    "Model",
    "ModelError",
    "ModelRequest",
    "ScriptedModel",
    "StepContext",
    "Transcript",
    "check_chunk",
    "split_text",
]
