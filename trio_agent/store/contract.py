"""``Store``: what every session store offers (spec/persistence.md §5–§7, §10).

:class:`~trio_agent.store.JsonlStore` and :class:`~trio_agent.store.PostgresStore` both
implement it, and code that only opens, creates and reads sessions (``trio-agent run``, the
demo, the store contract tests) is written against it, not against one backend. Both apply
the same id rules (:func:`~trio_agent.store.ids.check_id`) and raise the same errors
(:mod:`trio_agent.store.errors`); tests/store/test_contract.py runs one suite over both.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self

from ..log import Event
from .session import Session

__all__ = ["Store"]


class Store(Protocol):
    """A store of sessions, used as an async context manager that owns its writers."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def create(self, session_id: str) -> Session:
        """A new live session; an id already stored is :class:`SessionExists`."""
        ...

    async def open(self, session_id: str) -> Session:
        """Cold open: repair, durably, then the live session (spec/persistence.md §5)."""
        ...

    def live(self, session_id: str) -> Session | None:
        """The session if it is live in this process, else ``None``."""
        ...

    async def inspect(self, session_id: str) -> list[Event]:
        """The events, read-only: a cold session with the closers repair would append."""
        ...

    async def load(self, session_id: str) -> list[Event]:
        """A balanced snapshot, read-only, or :class:`LiveTurnOpen`."""
        ...

    async def session_ids(self) -> list[str]:
        """The ids of the stored sessions, sorted by code point."""
        ...
