"""Session id → directory name: injective, and no id can name a path outside the root.

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


def escape_id(session_id: str) -> str:
    """The directory name of ``session_id`` under a store root. Raises ``ValueError`` if empty."""
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("a session id must be a non-empty string")
    raw = session_id.encode("utf-8", "surrogatepass")
    name = "".join([_TABLE[b] for b in raw])
    if len(name) <= MAX_PLAIN:
        return name
    digest = hashlib.sha256(raw).hexdigest()
    return f"{name[:_PREFIX].rstrip('%0123456789ABCDEF') or 'x'}~{digest}"
