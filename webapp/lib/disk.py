"""The cause of an error in words, when it is a full disk.

A full disk rarely surfaces as itself: a library wraps the OSError (Hugging Face datasets raises
DatasetGenerationError from it), and PostgreSQL reports it as its own error (SQLSTATE 53100,
disk_full). `disk_full(exc)` walks the chain of causes to find it, so a failure can say
"no space left on device" instead of naming the wrapper. The words never include the path or
the message (a message can quote data).
"""

from __future__ import annotations

import errno

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
DISK_FULL_SQLSTATE = "53100"


def causes(exc: BaseException | None):
    """`exc` and every exception it was raised from or while handling, each once."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def disk_full(exc: BaseException | None) -> str:
    """ "" unless a full disk is somewhere in the chain; else what was full, in words."""
    for cause in causes(exc):
        if isinstance(cause, OSError) and cause.errno in FULL_ERRNOS:
            return "no space left on device" if cause.errno == errno.ENOSPC else "disk quota exceeded"
        if getattr(cause, "sqlstate", None) == DISK_FULL_SQLSTATE:
            return "no space left on the database server's disk"
    return ""
