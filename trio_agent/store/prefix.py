"""``FileLines``: a log's checkpointed prefix, read from the file when asked.

A cold open that resumed from a checkpoint (spec/persistence.md §5.1) neither reads nor holds
the prefix the checkpoint describes: the session's events are this sequence followed by the
tail's lines in memory (:class:`~trio_agent.log.lines.EventLines`). So opening a long session
costs its tail, and holding it costs its tail plus what is read back.

The lines are read through a descriptor of their own (a new open file description of the same
file, so the session's lock and its writer's offset are untouched); it stays valid if the
file is renamed, and is closed when this object is collected. Reading streams the prefix in
chunks; the first random access builds an index of line offsets (8 bytes a line) and reads
each line on its own after that. Every read checks that the prefix still holds exactly the
lines counted when the checkpoint was recorded, each a JSON object with the seq of its place
(a second parse, paid only when the prefix is read), and raises :class:`PrefixChanged`
otherwise.
"""

from __future__ import annotations

import os
import weakref
from array import array
from collections.abc import Iterator, Sequence
from typing import Final, overload

import orjson

from .errors import PrefixChanged

__all__ = ["FileLines"]

_CHUNK: Final = 1 << 20


class FileLines(Sequence[bytes]):
    """The ``count`` lines (newlines kept) between byte ``start`` and ``end`` of a file."""

    __slots__ = ("__weakref__", "_count", "_end", "_fd", "_index", "_path", "_start")

    def __init__(self, fd: int, path: str, *, start: int, end: int, count: int) -> None:
        """``fd`` is any descriptor of the log; this object opens its own and never uses or
        closes ``fd`` again."""
        self._fd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        weakref.finalize(self, os.close, self._fd)
        self._path = path
        self._start = start
        self._end = end
        self._count = count
        self._index: array[int] | None = None

    def __len__(self) -> int:
        return self._count

    def _changed(self, what: str) -> PrefixChanged:
        return PrefixChanged(self._path, f"bytes {self._start}-{self._end}: {what}")

    def _chunks(self, start: int, end: int) -> Iterator[bytes]:
        """The bytes from ``start`` to ``end``, in chunks; raises if the file is shorter."""
        at = start
        while at < end:
            data = os.pread(self._fd, min(_CHUNK, end - at), at)
            if not data:
                raise self._changed(f"the file ends at byte {at}")
            at += len(data)
            yield data

    def _lines(self, start: int, end: int) -> Iterator[bytes]:
        """The complete lines from ``start`` to ``end`` (which must end a line)."""
        rest = b""
        for chunk in self._chunks(start, end):
            data = rest + chunk if rest else chunk
            begin = 0
            find = data.find
            while (stop := find(b"\n", begin) + 1) != 0:
                yield data[begin:stop]
                begin = stop
            rest = data[begin:]
        if rest:
            raise self._changed("the prefix no longer ends with a whole line")

    def _event(self, index: int, line: bytes) -> bytes:
        """``line``, once it is seen to be event ``index`` still: the prefix was checked when
        the checkpoint was recorded, not when the session was opened, so a line rewritten
        since must be an error here, not a wrong event or a parse failure further up."""
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if (
            type(obj) is not dict
            or obj.get("seq") != index
            or type(obj.get("time")) is not int
            or type(obj.get("type")) is not str
            or type(obj.get("data")) is not dict
        ):
            raise self._changed(f"line {index + 2} is no longer event seq {index}")
        return line

    def __iter__(self) -> Iterator[bytes]:
        n = 0
        for line in self._lines(self._start, self._end):
            yield self._event(n, line)
            n += 1
        if n != self._count:
            raise self._changed(f"{n} lines where the checkpoint counted {self._count}")

    def _offsets(self) -> array[int]:
        """Where each line starts, and where the last ends (built on first use)."""
        if self._index is None:
            index = array("q", [self._start])
            at = self._start
            for line in self._lines(self._start, self._end):
                at += len(line)
                index.append(at)
            if len(index) - 1 != self._count:
                found = len(index) - 1
                raise self._changed(f"{found} lines where the checkpoint counted {self._count}")
            self._index = index
        return self._index

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            if stop <= start:
                return []
            if start == 0 and stop == self._count:  # the whole prefix: no index needed
                return list(self)
            offsets = self._offsets()
            lines = self._lines(offsets[start], offsets[stop])
            return [self._event(i, line) for i, line in enumerate(lines, start)]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("line index out of range")
        offsets = self._offsets()
        begin, end = offsets[index], offsets[index + 1]
        line = b"".join(self._chunks(begin, end))
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            raise self._changed(f"line {index + 2} no longer reads as one line")
        return self._event(index, line)

    def __reversed__(self) -> Iterator[bytes]:
        for i in range(self._count - 1, -1, -1):
            yield self[i]

    def __repr__(self) -> str:
        return f"<FileLines {self._path} bytes {self._start}-{self._end}: {self._count} lines>"
