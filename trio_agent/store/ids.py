"""Session id → directory name: injective, and no id can name a path outside the root; and
back (:func:`unescape_id`), for a name kept whole.

Kept as is: ``a-z``, ``0-9``, ``-`` and ``_``. Every other UTF-8 byte becomes ``%XX`` (two
upper-case hex digits), upper-case letters and ``%`` included, so a name is one path component
(``/`` and NUL are escaped), never ``.`` or ``..`` (``.`` is escaped), and distinct ids stay
distinct even on a case-insensitive file system (the literal letters are all lower case and the
hex digits all upper case; ``%`` always starts an escape).

An escaped id longer than :data:`MAX_PLAIN` characters is cut to a prefix and followed by ``~``
and the SHA-256 of the id. ``~`` never appears in a plain name, so long and short names cannot
collide; two long ids collide only if SHA-256 does.
"""

from __future__ import annotations

import hashlib
from typing import Final

#: Longest escaped name kept whole (file systems allow 255 bytes per component).
MAX_PLAIN: Final = 160
_PREFIX: Final = 96
_SAFE: Final = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_")
_TABLE: Final = tuple(chr(b) if b in _SAFE else f"%{b:02X}" for b in range(256))


#: Longest session id, in UTF-8 bytes: its header line stays short enough for every reader.
MAX_ID_BYTES: Final = 4096


def check_id(session_id: str) -> bytes:
    """``session_id`` as UTF-8, if it is a session id every store accepts.

    Raises ``ValueError`` naming the rule for an id that is not a non-empty string of valid
    Unicode text (a lone surrogate cannot be written as UTF-8, so no log could hold it)
    without NUL (PostgreSQL's text cannot hold one, nor can a port's C string) of at most
    :data:`MAX_ID_BYTES` bytes (spec/persistence.md §1), before anything is created. Both
    stores apply it, so an id one store takes, the other takes too.
    """
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("a session id must be a non-empty string")
    if "\0" in session_id:
        raise ValueError(f"a session id must not hold a NUL character: {session_id!r}")
    try:
        raw = session_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"a session id must be valid Unicode text: {session_id!r} holds a lone surrogate "
            f"at position {exc.start}"
        ) from None
    if len(raw) > MAX_ID_BYTES:
        raise ValueError(f"a session id is at most {MAX_ID_BYTES} bytes of UTF-8, not {len(raw)}")
    return raw


def escape_id(session_id: str) -> str:
    """The directory name of ``session_id`` under a store root (:func:`check_id`'s rules)."""
    raw = check_id(session_id)
    name = "".join([_TABLE[b] for b in raw])
    if len(name) <= MAX_PLAIN:
        return name
    digest = hashlib.sha256(raw).hexdigest()
    return f"{name[:_PREFIX].rstrip('%0123456789ABCDEF') or 'x'}~{digest}"


def unescape_id(name: str) -> str | None:
    """The session id whose directory name is ``name``, or ``None`` when no id's is: a name
    :func:`escape_id` cannot give (a byte kept that it escapes, a lower-case hex digit, an
    escape of bytes that are not UTF-8), or one cut and hashed (``~``), which names its id
    only through the log's header."""
    raw = bytearray()
    i = 0
    while i < len(name):
        char = name[i]
        if char == "%":
            digits = name[i + 1 : i + 3]
            if len(digits) != 2 or digits.strip("0123456789ABCDEF"):
                return None
            raw.append(int(digits, 16))
            i += 3
        elif char.isascii() and ord(char) in _SAFE:
            raw.append(ord(char))
            i += 1
        else:
            return None
    try:
        session_id = raw.decode("utf-8")
        return session_id if escape_id(session_id) == name else None
    except ValueError:  # not UTF-8, or not an id (empty, a NUL, too long)
        return None
