"""The cancel vocabulary every layer above the store shares: causes and the controller view.

This is a bottom module (it imports nothing from the package): models, tools and runtime all
import it, so none of them reaches into another for these two types.

Cancel causes: who pulled the wire (spec/cancel.md K4).

The set is closed: ``user``, ``parent``, ``hook(reason)`` and ``disposed``. A cause is visible
at runtime (the turn's outcome, runtime events, the controller view) and never in the log:
``turn/end{aborted}`` carries no cause. Anything that is not a :class:`CancelCause` is refused
with :class:`TypeError` where it is passed, so a typo cannot reach a turn.
"""

from __future__ import annotations

from typing import Any, Final, Literal, Protocol, final

import attrs

CancelKind = Literal["user", "parent", "hook", "disposed"]

CANCEL_KINDS: Final[frozenset[str]] = frozenset({"user", "parent", "hook", "disposed"})


def _check_kind(_: Any, __: Any, kind: object) -> None:
    if type(kind) is not str or kind not in CANCEL_KINDS:
        raise TypeError(
            f"cancel cause kind must be one of user, parent, hook, disposed; got {kind!r}"
        )


@final
@attrs.frozen(slots=True)
class CancelCause:
    """Why a turn was cancelled. Build one with :meth:`user`, :meth:`parent`, :meth:`hook` or
    :meth:`disposed`; ``reason`` is present exactly for ``hook``."""

    kind: CancelKind = attrs.field(validator=_check_kind)
    reason: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.kind == "hook":
            if type(self.reason) is not str:
                raise TypeError(f"a hook cancel cause needs a str reason, got {self.reason!r}")
        elif self.reason is not None:
            raise TypeError(f"a {self.kind} cancel cause takes no reason")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("CancelCause is a closed set and cannot be subclassed")

    @classmethod
    def user(cls) -> CancelCause:
        """The person at the keyboard pressed Esc."""
        return cls("user")

    @classmethod
    def parent(cls) -> CancelCause:
        """A parent agent or an enclosing task interrupts this one."""
        return cls("parent")

    @classmethod
    def hook(cls, reason: str) -> CancelCause:
        """A hook (a policy, a budget, a watchdog) stopped the turn, saying why."""
        return cls("hook", reason)

    @classmethod
    def disposed(cls) -> CancelCause:
        """The agent is shutting down (leaving ``open_agent``)."""
        return cls("disposed")

    def describe(self) -> str:
        """``"user"``, ``"hook: over budget"``: a one-line label (also trio's cancel reason)."""
        return self.kind if self.reason is None else f"{self.kind}: {self.reason}"


def require_cause(cause: object) -> CancelCause:
    """Return ``cause`` if it is a :class:`CancelCause`, else raise :class:`TypeError`."""
    if type(cause) is not CancelCause:
        raise TypeError(
            "cancel() needs a CancelCause (CancelCause.user(), .parent(), .hook(reason) or "
            f".disposed()), got {type(cause).__name__} {cause!r}"
        )
    return cause


class ControllerView(Protocol):
    """Read-only view of the turn's controller, passed to every seam (spec/cancel.md §Seams)."""

    @property
    def cancel_called(self) -> bool: ...

    @property
    def cause(self) -> CancelCause | None: ...

    @property
    def turn(self) -> int | None: ...


__all__ = ["CANCEL_KINDS", "CancelCause", "CancelKind", "ControllerView", "require_cause"]
