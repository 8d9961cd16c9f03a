"""The inbox as a projection of ``agent/inbox/spliced`` events (spec/log.md
§``agent/inbox/spliced``; rule I18 of spec/invariants.md).

Two ordered queues of messages: ``next-turn`` (one item starts one turn) and ``next-step``
(all items enter the nearest step). Nothing else stores the inbox: replaying the splices of a
log rebuilds it exactly, which is how a reopened session finds work a crash left queued.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

TARGETS: Final = ("next-turn", "next-step")


class SpliceError(ValueError):
    """A splice that does not apply to the current projection (rule I18)."""


class InboxProjection:
    """The two queues, as lists of message objects ``{id, text, source}``."""

    __slots__ = ("_ids", "queues")

    def __init__(self) -> None:
        self.queues: dict[str, list[Mapping[str, Any]]] = {t: [] for t in TARGETS}
        self._ids: set[str] = set()

    def copy(self) -> InboxProjection:
        other = InboxProjection()
        other.queues = {t: list(q) for t, q in self.queues.items()}
        other._ids = set(self._ids)
        return other

    @property
    def next_turn(self) -> Sequence[Mapping[str, Any]]:
        return self.queues["next-turn"]

    @property
    def next_step(self) -> Sequence[Mapping[str, Any]]:
        return self.queues["next-step"]

    @property
    def has_pending(self) -> bool:
        return bool(self.queues["next-turn"] or self.queues["next-step"])

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def check(self, data: Mapping[str, Any]) -> None:
        """Raise :class:`SpliceError` unless the splice ``data`` applies. Changes nothing."""
        queue = self.queues[data["target"]]
        start: int = data["start"]
        removed: int = data.get("removedCount", 0)
        inserted: Sequence[Mapping[str, Any]] = data["inserted"]
        if not removed and not inserted:
            raise SpliceError("a splice that removes and inserts nothing is not logged")
        if "outcome" in data and not removed:
            raise SpliceError('outcome "canceled" requires a removal')
        if start > len(queue):
            raise SpliceError(
                f"start {start} is past the end of {data['target']} (length {len(queue)})"
            )
        if start + removed > len(queue):
            raise SpliceError(
                f"removes {removed} at {start} but {data['target']} has {len(queue)} item(s)"
            )
        remaining = self._ids.difference(m["id"] for m in queue[start : start + removed])
        for message in inserted:
            if message["id"] in remaining:
                raise SpliceError(f"message id {message['id']!r} is already queued")
            remaining.add(message["id"])

    def try_apply(self, data: Mapping[str, Any]) -> bool:
        """Apply the splice ``data`` and return True when :meth:`check` would accept it;
        otherwise change nothing and return False (the checker's fast path; :meth:`check`
        words the refusal). Unlike :meth:`check` it copies no id set."""
        queue = self.queues[data["target"]]
        start: int = data["start"]
        removed: int = data.get("removedCount", 0)
        end = start + removed
        inserted: Sequence[Mapping[str, Any]] = data["inserted"]
        if end > len(queue) or not (removed or inserted) or ("outcome" in data and not removed):
            return False
        ids = self._ids
        seen: set[str] = set()
        if inserted:
            gone: Collection[str] = {m["id"] for m in queue[start:end]} if removed else ()
            for message in inserted:
                mid = message["id"]
                if (mid in ids and mid not in gone) or mid in seen:
                    return False
                seen.add(mid)
        for message in queue[start:end]:
            ids.discard(message["id"])
        queue[start:end] = inserted
        ids.update(seen)
        return True

    def apply(self, data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Apply a splice already accepted by :meth:`check`; return the removed messages."""
        queue = self.queues[data["target"]]
        start: int = data["start"]
        end = start + data.get("removedCount", 0)
        removed = queue[start:end]
        queue[start:end] = data["inserted"]
        for message in removed:
            self._ids.discard(message["id"])
        for message in data["inserted"]:
            self._ids.add(message["id"])
        return removed
