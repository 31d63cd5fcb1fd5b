"""Logs hold ids, counts, types and code lines, never note text nor metadata values.

The code takes care to log so (`log.error("import %s failed (%s)", pk, type(exc).__name__)`);
`WithholdRowContent`, a filter on every handler of LOGGING in settings (the root's, so every
logger that propagates: django.request, celery, kombu, psycopg, ours; and celery.task's, which
a worker cuts off from the root), scrubs what slips through:

1. An exception's message is data unless its type says otherwise. A database error quotes the
   row ("DETAIL:  Failing row contains (...)", "Key (external_id)=(...) already exists",
   "CONTEXT:  COPY corpus_note, line 1: ..."), a library quotes its input (a KeyError its key,
   gzip the first bytes, a tokenizer the text). So an exception is logged as its stack frames
   (code lines) and type names, along its whole chain of causes; its message is kept only for
   our own typed errors (written with ids and line numbers, modules in OWN_PACKAGES) and the
   system errors in KEEPS_MESSAGE. The same holds where the message appears in the log line
   itself (Celery's "Task ... raised unexpected: ValueError('...')", an exception passed as an
   argument, Django's BadRequest line).
2. A request attached to a record (django.request passes it, with its POST body and files) and
   any other structured extra (Celery's `data` holds the exception's repr and traceback) are
   dropped; extras that are numbers (status_code) stay. The message already names the path.
3. Last resort, on whatever text is left: from a database's "DETAIL:" / "CONTEXT:" label, or
   "Failing row contains", to the end is cut.
4. A permission refusal (PermissionDenied, a 403) is expected, not an error: one line, no
   traceback (Django's "Forbidden (Permission denied): /path").

The record is changed in place and marked, so the handlers after the first (pytest's caplog, a
second stream) see the scrubbed record and a second pass costs nothing. No Django here: plain
`logging`, tested with crafted records (tests/webapp/test_logs.py).
"""

from __future__ import annotations

import logging
import re
import traceback

OWN_PACKAGES = frozenset({"webapp", "workers", "ml"})
# Messages about the system, never about a row: paths, sizes, limits.
KEEPS_MESSAGE = frozenset(
    {
        "FileNotFoundError",
        "FileExistsError",
        "PermissionError",
        "IsADirectoryError",
        "NotADirectoryError",
        "TimeoutError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "BrokenPipeError",
        "MemoryError",
        "celery.exceptions.SoftTimeLimitExceeded",
        "celery.exceptions.TimeLimitExceeded",
        "billiard.exceptions.SoftTimeLimitExceeded",
        "billiard.exceptions.TimeLimitExceeded",
        "billiard.exceptions.WorkerLostError",
        "torch.OutOfMemoryError",
        "django.core.exceptions.PermissionDenied",
        "django.core.exceptions.DisallowedHost",
        "django.core.exceptions.RequestDataTooBig",
        "django.core.exceptions.TooManyFieldsSent",
        "django.core.exceptions.TooManyFilesSent",
    }
)
ONE_LINE = frozenset({"django.core.exceptions.PermissionDenied"})
ROW_CONTENT = re.compile(r"\b(?:DETAIL|CONTEXT|QUERY|STATEMENT):.*|Failing row contains.*", re.DOTALL)
WITHHELD = "[row content withheld]"
SHORTEST_QUOTE = 4  # a shorter message (a key like 5) cannot be told from the ids in the line
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
_MARK = "row_content_withheld"


class WithholdRowContent(logging.Filter):
    """Scrub the record (see the module doc); never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, _MARK, False):
            scrub(record)
        return True


def scrub(record: logging.LogRecord) -> None:
    exc = record.exc_info[1] if record.exc_info else None
    withheld = [e for e in _chain(exc, record.msg, *_exceptions_in(record.args)) if not keeps_message(e)]
    message = _rendered(record)
    for e in withheld:  # where the message appears in the line itself
        for text in (_text(repr, e), _text(str, e)):
            if len(text.strip()) >= SHORTEST_QUOTE and text != f"{type(e).__name__}()":
                message = message.replace(text, f"<{type_name(e)}: message withheld>")
    record.msg, record.args = cut_row_content(message), ()
    if exc is not None:
        record.exc_text = None if type_name(exc) in ONE_LINE else cut_row_content(format_exception(exc))
        record.exc_info = None  # the text above replaces it: no formatter renders the message again
    elif record.exc_text:
        record.exc_text = cut_row_content(record.exc_text)
    for key in set(vars(record)) - _STANDARD:
        value = getattr(record, key)
        if isinstance(value, str):
            setattr(record, key, cut_row_content(value))
        elif not (value is None or isinstance(value, int | float)):
            delattr(record, key)  # a request, Celery's `data`: structured, and may hold content
    setattr(record, _MARK, True)


def keeps_message(exc: BaseException) -> bool:
    name = type_name(exc)
    return name.split(".", 1)[0] in OWN_PACKAGES or name in KEEPS_MESSAGE


def type_name(exc: BaseException) -> str:
    module, name = type(exc).__module__, type(exc).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


def format_exception(exc: BaseException) -> str:
    """Like traceback.format_exception, along the chain of causes, with each message withheld
    unless keeps_message()."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        frames = traceback.format_tb(exc.__traceback__)
        part = (["Traceback (most recent call last):\n", *frames] if frames else []) + [_headline(exc) + "\n"]
        if exc.__cause__ is not None:
            part.insert(0, "\nThe above exception was the direct cause of the following exception:\n\n")
            exc = exc.__cause__
        elif exc.__context__ is not None and not exc.__suppress_context__:
            part.insert(0, "\nDuring handling of the above exception, another exception occurred:\n\n")
            exc = exc.__context__
        else:
            exc = None
        parts[:0] = part
    return "".join(parts).rstrip("\n")


def cut_row_content(text: str) -> str:
    return ROW_CONTENT.sub(WITHHELD, text)


def _headline(exc: BaseException) -> str:
    if not keeps_message(exc):
        return f"{type_name(exc)} (message withheld from logs)"
    message = _text(str, exc)
    return f"{type_name(exc)}: {message}" if message else type_name(exc)


def _text(render, exc: BaseException) -> str:
    try:
        return render(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not break logging
        return ""


def _chain(*candidates) -> list:
    seen = []
    for exc in candidates:
        while isinstance(exc, BaseException) and all(exc is not s for s in seen):
            seen.append(exc)
            exc = exc.__cause__ or exc.__context__
    return seen


def _exceptions_in(args) -> list:
    values = args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else ()
    return [v for v in values if isinstance(v, BaseException)]


def _rendered(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # noqa: BLE001 - the handler would print the arguments to stderr: withhold them
        return f"{record.msg} [arguments withheld: they did not fit the message]"


def filter_every_handler() -> int:
    """Put WithholdRowContent on every handler of every logger that lacks it: the handlers that
    Celery (its `multiprocessing` logger in a worker) or gunicorn (its error and access logs)
    set up after Django's LOGGING. Returns the handlers it added the filter to."""
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    added = 0
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, WithholdRowContent) for f in handler.filters):
                handler.addFilter(WithholdRowContent())
                added += 1
    return added
