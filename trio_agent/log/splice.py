"""What one ``agent/inbox/spliced`` does to the inbox: insert, claim or drop (spec/log.md).

spec/log.md §``agent/inbox/spliced`` defines the three kinds, and this module is the one place
that reads them off a splice's data (the checker's claim rules, the consumed-work fold,
truncation, ``show``, the demo's log pane, the test harness and the reference model ask it):

* a splice without ``removedCount`` is an **insert**: it only queues ``inserted``;
* a removal without ``outcome`` is a **claim**: the runtime takes the removed messages to run
  them (rule I19);
* a removal with ``outcome: "canceled"`` is a **drop**: the removed messages are discarded
  without running; whatever it inserts replaces them (a *replacement*, which keeps work
  pending, spec/consumed-work.md C3).

:func:`splice_kind` needs only the data; :func:`classify_splice` also takes the queues the
splice applies to (the inbox projection, or any mapping of target to queue) and says which
entries the splice claims, drops and inserts.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs

__all__ = ["Splice", "SpliceKind", "classify_splice", "splice_kind"]

T = TypeVar("T")


class SpliceKind(enum.Enum):
    """The three kinds of splice (spec/log.md §``agent/inbox/spliced``)."""

    #: No removal: the splice only queues its ``inserted`` messages.
    INSERT = "insert"
    #: A removal without ``outcome``: the removed messages are taken to run (rule I19).
    CLAIM = "claim"
    #: A removal with ``outcome: "canceled"``: the removed messages are discarded unrun.
    DROP = "drop"


# The members bound once: on Python 3.11 reading one off the class goes through the enum's
# metaclass, several times the cost of a global, and the file commands ask per splice.
_INSERT, _CLAIM, _DROP = SpliceKind.INSERT, SpliceKind.CLAIM, SpliceKind.DROP


def splice_kind(data: Mapping[str, Any]) -> SpliceKind:
    """The kind of the splice whose event data is ``data`` (no validation: read a checked log)."""
    if "removedCount" not in data:
        return _INSERT
    if "outcome" in data:
        return _DROP
    return _CLAIM


@attrs.frozen
class Splice(Generic[T]):
    """One splice, classified against the queue it applies to (see :func:`classify_splice`)."""

    kind: SpliceKind
    #: ``"next-turn"`` or ``"next-step"``.
    target: str
    start: int
    #: The queue entries the splice removes (claimed or dropped, by :attr:`kind`).
    removed: Sequence[T]
    #: The messages the splice puts in at :attr:`start`, as logged.
    inserted: Sequence[Mapping[str, Any]]

    @property
    def claimed(self) -> Sequence[T]:
        """The entries taken to run: :attr:`removed` of a claim, else nothing."""
        return self.removed if self.kind is SpliceKind.CLAIM else ()

    @property
    def dropped(self) -> Sequence[T]:
        """The entries discarded unrun: :attr:`removed` of a drop, else nothing."""
        return self.removed if self.kind is SpliceKind.DROP else ()

    @property
    def drops_unrun(self) -> bool:
        """A drop that inserts nothing: queued work is gone, not replaced (C3)."""
        return self.kind is SpliceKind.DROP and not self.inserted


def classify_splice(data: Mapping[str, Any], queues: Mapping[str, Sequence[T]]) -> Splice[T]:
    """Classify the splice ``data`` against ``queues`` (target -> queue, before the splice).

    ``queues`` is the inbox the splice applies to: :attr:`InboxProjection.queues
    <trio_agent.log.inbox.InboxProjection.queues>` (entries are messages), or any other
    projection of it (the reference model keeps message ids). Changes nothing.
    """
    start: int = data["start"]
    removed = queues[data["target"]][start : start + data.get("removedCount", 0)]
    return Splice(splice_kind(data), data["target"], start, removed, data["inserted"])
