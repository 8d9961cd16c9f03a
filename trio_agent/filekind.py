"""What a path that is not a regular file is, in words: one wording for every refusal.

The store (spec/persistence.md §1), the file commands (spec/cli.md §Input files) and
the interactive session all refuse a FIFO, a device, a directory or a link where a log
belongs, and name it the same way. A bottom module of its own, importing only the standard
library: the file commands read it before anything else, and must not pay for importing
trio or the store just to word a refusal.
"""

from __future__ import annotations

import stat


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (``None`` for a regular file).

    One wording for every refusal (spec/persistence.md §1, spec/cli.md §Input files): the
    store's, the command line's and the interactive session's. ``mode`` comes from ``lstat``
    where a symbolic link must be named, from ``stat``/``fstat`` otherwise.
    """
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is a special file"
