"""``--store`` values: a store directory, or a database DSN (no database driver imported).

spec/cli.md §Sessions in a database: a ``postgresql://`` (or ``postgres://``) URI, or a libpq
``key=value`` string that is not an existing directory, names a database; anything else is a
JSONL store directory, as before.
"""

from __future__ import annotations

import os
import re

__all__ = ["is_dsn", "redact"]

_KEY = re.compile(r"^\s*[A-Za-z_]+\s*=")
_URI_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:/?#@]*):[^@/?#]*@", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def is_dsn(value: str) -> bool:
    """Whether a ``--store`` value names a database rather than a store directory."""
    if value.lower().startswith(("postgresql://", "postgres://")):
        return True
    # os.path.isdir, not Path.is_dir: a value too long for a file name is no directory,
    # where Path.is_dir raises.
    return _KEY.match(value) is not None and not os.path.isdir(value)


def redact(dsn: str) -> str:
    """The DSN as it may be printed: any password replaced by ``***``."""
    if dsn.lower().startswith(("postgresql://", "postgres://")):
        dsn = _URI_PASSWORD.sub(r"\1:***@", dsn)
        return _QUERY_PASSWORD.sub(r"\1***", dsn)
    return _KV_PASSWORD.sub(r"\1***", dsn)
