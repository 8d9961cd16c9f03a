"""The process's stdout and stderr, whose write errors say which stream failed.

An ``OSError`` escaping a command is as likely a bug as a full disk under ``trio-agent show
FILE > out``; only a failure of the stream itself may be reported as one (spec/cli.md
§trio-agent's own codes, exit 74). So when the command line runs as a process, fd 1 and fd 2
are written through :class:`_StreamFile`, which turns an error into :class:`OutputFailed`
naming the stream. A closed pipe stays a :class:`BrokenPipeError` (exit 141). stderr also
shows its control characters, but the newline (:class:`_ShownText`), so that no message can
drive the terminal it is read on. A character stdout's encoding cannot write (an ASCII or
Latin-1 locale, ``PYTHONIOENCODING``) is written as a JSON escape (:data:`ESCAPES`), not
raised (spec/cli.md §Output encoding). A standard descriptor the process was started
without is opened on ``/dev/null`` first, so that no file takes its number; a write to a
stdout closed so fails as above (exit 74).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import sys
from typing import Any, Final, TextIO

__all__ = ["OutputFailed", "failure", "guard_std_streams", "say", "silence"]


class OutputFailed(OSError):
    """Writing ``stream`` (``"stdout"`` or ``"stderr"``) failed; not a closed pipe."""

    def __init__(self, errno: int | None, strerror: str, stream: str) -> None:
        super().__init__(errno, strerror)
        self.stream = stream


class _StreamFile(io.RawIOBase):
    """File descriptor ``fd`` (1 or 2) as a raw stream whose write errors are
    :class:`OutputFailed`. Closing it leaves the descriptor open, as ``RawIOBase`` does."""

    def __init__(self, fd: int, name: str, *, closed_at_start: bool = False) -> None:
        super().__init__()
        self._fd, self._name = fd, name
        #: The process was started without this descriptor: every write fails, until
        #: :func:`silence` lets them go to ``/dev/null``, where the descriptor points.
        self.closed_at_start = closed_at_start
        #: The first write that failed: kept, as some callers swallow the error (argparse's
        #: help and version do).
        self.failed: OutputFailed | None = None

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: Any) -> int:
        try:
            if self.closed_at_start:
                raise OSError(errno.EBADF, "it was closed when trio-agent started")
            return os.write(self._fd, data)
        except (BrokenPipeError, BlockingIOError):
            raise
        except OSError as exc:
            failed = OutputFailed(exc.errno, exc.strerror or str(exc), self._name)
            self.failed = self.failed or failed
            raise failed from None


#: The error handler of stdout's encoding: what it cannot encode is written ``\uXXXX``, a
#: character above U+FFFF as its surrogate pair. Inside a JSON string that is the same
#: string, so JSON output stays valid and equal; in text it names the character.
ESCAPES: Final = "trio_agent.json_escapes"


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    escaped = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            escaped.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{code:04x}")
    return "".join(escaped), error.end


codecs.register_error(ESCAPES, _json_escapes)


class _ShownText(io.TextIOWrapper):
    """stderr: its control characters shown, but for the newlines that end its lines
    (``render.visible_in_lines``: ESC as ``␛``...). Every line there is a message, and a
    message may quote what came from outside: a file name from a glob, a model's error. No
    such part may recolour, move the cursor over or retitle the terminal (spec/cli.md
    §stderr: errors and notes). One character for one, so a write's count is the caller's."""

    def write(self, text: str) -> int:
        from ..log.render import visible_in_lines  # with the log core, which every command has

        return super().write(visible_in_lines(text))


def _guarded(stream: TextIO, fd: int, name: str) -> TextIO:
    """A text stream on ``fd`` buffered as ``stream`` is: over a buffer, or straight over the
    raw file under ``python -u`` (``PYTHONUNBUFFERED``), line-buffered or written through;
    for stderr, a :class:`_ShownText`. In ``stream``'s encoding; where its errors are strict
    (stdout's default), with :data:`ESCAPES` instead (stderr's default already escapes)."""
    raw = _StreamFile(fd, name)
    unbuffered = isinstance(getattr(stream, "buffer", None), io.RawIOBase)
    under: Any = raw if unbuffered else io.BufferedWriter(raw)
    text_stream = _ShownText if name == "stderr" else io.TextIOWrapper
    return text_stream(
        under,
        encoding=stream.encoding,
        errors=ESCAPES if stream.errors == "strict" else stream.errors,
        line_buffering=bool(stream.line_buffering),
        write_through=bool(getattr(stream, "write_through", False)),
    )


def guard_std_streams() -> tuple[TextIO, TextIO]:
    """``sys.stdout`` and ``sys.stderr`` replaced by streams like them (encoding, errors,
    buffering) over :class:`_StreamFile`, and returned. Only the interpreter's own streams
    are replaced (not a test's capture): one buffer then holds everything bound for each
    fd, argparse's help included.

    A standard descriptor the process was started without (``>&-``, ``2>&-``, ``<&-``;
    Python then sets its stream to ``None``) is first opened on ``/dev/null``
    (:func:`_fill_closed`). stdin then reads as empty, stderr's messages go nowhere, and
    stdout's first write fails as any failed write does: exit 74, said on stderr."""
    closed = _fill_closed()
    if 0 in closed and sys.stdin is None:  # open for the process's life, as Python's is
        sys.stdin = open(0, closefd=False, errors="replace")  # noqa: SIM115
    if 1 in closed and sys.stdout is None:
        sys.stdout = _closed_at_start(1, "stdout")
    elif sys.stdout is sys.__stdout__ and sys.stdout is not None:
        sys.stdout = _guarded(sys.stdout, 1, "stdout")
    if 2 in closed and sys.stderr is None:
        sys.stderr = _closed_at_start(2, "stderr")
    elif sys.stderr is sys.__stderr__ and sys.stderr is not None:
        sys.stderr = _guarded(sys.stderr, 2, "stderr")
    return sys.stdout, sys.stderr


def _fill_closed() -> frozenset[int]:
    """Each of descriptors 0, 1 and 2 that is not open, opened on ``/dev/null``; returns
    which were not. Else the next file the command opened would take that number: a session
    log opened as descriptor 1 would be every child's stdout."""
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    return frozenset(closed)


def _closed_at_start(fd: int, name: str) -> TextIO:
    """The stream of descriptor ``fd``, which the process was started without (now on
    ``/dev/null``): stdout's writes fail, naming the stream; stderr's go nowhere."""
    raw = _StreamFile(fd, name, closed_at_start=name == "stdout")
    text_stream = _ShownText if name == "stderr" else io.TextIOWrapper
    return text_stream(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace")


def _raw(stream: TextIO) -> _StreamFile | None:
    """The :class:`_StreamFile` under ``stream``, if :func:`guard_std_streams` made it."""
    under = getattr(stream, "buffer", None)
    raw = getattr(under, "raw", under)
    return raw if isinstance(raw, _StreamFile) else None


def failure(stream: TextIO) -> OutputFailed | None:
    """The first write of ``stream`` that failed, if it is one :func:`guard_std_streams` made
    (``None`` for any other stream)."""
    raw = _raw(stream)
    return None if raw is None else raw.failed


def silence(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null, so that what it still holds, and the
    interpreter's final flush, go nowhere quietly (after a closed pipe or a failed write)."""
    raw = _raw(stream)
    if raw is not None:
        raw.closed_at_start = False  # its descriptor is /dev/null already
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def say(err: TextIO, line: str) -> None:
    """Print ``line`` on ``err``. If even that fails, nothing more can be said: the exit code
    stands alone, and ``err`` is silenced so the interpreter's exit adds nothing."""
    try:
        print(line, file=err)
        err.flush()
    except (OSError, ValueError):
        silence(err)
