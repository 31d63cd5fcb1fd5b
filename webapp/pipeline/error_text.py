"""A relevance job's and its chunks' `error`, written by a worker in English (also read by the API,
the logs and the management commands), in the reader's language on the job page: each message
the workers write (webapp.pipeline.jobs, planning, chunks, releases; webapp.lifecycle's retry and
queue) is recognised with its values, which stay as stored (counts, an error's type, a model, a
worker, a reason); a message not recognised (an old row, an exception's own words) is shown as
stored. The English forms here must follow the workers' f-strings; a plural's two English forms
are the stored one, so an English page reads exactly as stored."""

import re

from django.utils.translation import gettext, ngettext

_TYPE = r"[A-Za-z_][\w.]*"
_PATTERNS = (
    (
        re.compile(
            r"(?P<failed>\d+) of (?P<total>\d+) chunks failed \(their errors are listed below\)\. "
            r"Press Resume to run them again\."
        ),
        lambda m: ngettext(
            "%(failed)s of %(total)s chunks failed (their errors are listed below). Press Resume to run them again.",
            "%(failed)s of %(total)s chunks failed (their errors are listed below). Press Resume to run them again.",
            int(m["total"]),
        ),
    ),
    (
        re.compile(
            rf"Planning failed \((?P<type>{_TYPE})\); the worker log has the details\. Press Resume to plan again\."
        ),
        lambda m: gettext("Planning failed (%(type)s); the worker log has the details. Press Resume to plan again."),
    ),
    (
        re.compile(r"The planner was lost; planning again automatically\."),
        lambda m: gettext("The planner was lost; planning again automatically."),
    ),
    (
        re.compile(
            r"Gave up after (?P<attempts>\d+) attempts: the worker stopped during each one "
            r"\(out of memory, or killed\)\. Try smaller chunks, then Resume\."
        ),
        lambda m: ngettext(
            "Gave up after %(attempts)s attempts: the worker stopped during each one (out of memory, or killed). "
            "Try smaller chunks, then Resume.",
            "Gave up after %(attempts)s attempts: the worker stopped during each one (out of memory, or killed). "
            "Try smaller chunks, then Resume.",
            int(m["attempts"]),
        ),
    ),
    (
        re.compile(r"The chunk took longer than the task time limit; launch with smaller chunks\."),
        lambda m: gettext("The chunk took longer than the task time limit; launch with smaller chunks."),
    ),
    (
        re.compile(
            rf"Stopped by a temporary problem \((?P<type>{_TYPE})\) that did not go away after "
            r"(?P<retries>\d+) retries\. Press Resume to try again\."
        ),
        lambda m: ngettext(
            "Stopped by a temporary problem (%(type)s) that did not go away after %(retries)s retries. "
            "Press Resume to try again.",
            "Stopped by a temporary problem (%(type)s) that did not go away after %(retries)s retries. "
            "Press Resume to try again.",
            int(m["retries"]),
        ),
    ),
    (
        re.compile(
            rf"Unexpected error \((?P<type>{_TYPE})\) while computing relevance; the worker log has the details\."
        ),
        lambda m: gettext("Unexpected error (%(type)s) while computing relevance; the worker log has the details."),
    ),
    (
        re.compile(rf"Could not compute relevance \((?P<type>{_TYPE})\): (?P<text>.+)", re.DOTALL),
        lambda m: gettext("Could not compute relevance (%(type)s): %(text)s"),
    ),
    (
        re.compile(
            r"No worker could load model (?P<model>.+?): released (?P<limit>\d+) times by each of "
            r"(?P<workers>.+?) \((?P<reason>.*)\)\. Make the model reachable by the relevance workers "
            r"\(docs/operations\.md: What must be shared\), then Resume\.",
            re.DOTALL,
        ),
        lambda m: ngettext(
            "No worker could load model %(model)s: released %(limit)s times by each of %(workers)s (%(reason)s). "
            "Make the model reachable by the relevance workers (docs/operations.md: What must be shared), "
            "then Resume.",
            "No worker could load model %(model)s: released %(limit)s times by each of %(workers)s (%(reason)s). "
            "Make the model reachable by the relevance workers (docs/operations.md: What must be shared), "
            "then Resume.",
            int(m["limit"]),
        ),
    ),
    (
        re.compile(
            r"Worker (?P<node>.+?) cannot load model (?P<model>.+?) \((?P<reason>.*)\); released for another "
            r"worker \((?P<count>\d+) of (?P<limit>\d+) releases by this worker\)\.",
            re.DOTALL,
        ),
        lambda m: ngettext(
            "Worker %(node)s cannot load model %(model)s (%(reason)s); released for another worker "
            "(%(count)s of %(limit)s releases by this worker).",
            "Worker %(node)s cannot load model %(model)s (%(reason)s); released for another worker "
            "(%(count)s of %(limit)s releases by this worker).",
            int(m["limit"]),
        ),
    ),
    (
        re.compile(
            rf"The task queue could not be reached \((?P<type>{_TYPE})\); (?P<sent>\d+) of (?P<total>\d+) "
            r"messages were sent\. Work that was not sent is sent again automatically once the queue is back "
            r"\(or press Resume\)\."
        ),
        lambda m: ngettext(
            "The task queue could not be reached (%(type)s); %(sent)s of %(total)s messages were sent. Work that "
            "was not sent is sent again automatically once the queue is back (or press Resume).",
            "The task queue could not be reached (%(type)s); %(sent)s of %(total)s messages were sent. Work that "
            "was not sent is sent again automatically once the queue is back (or press Resume).",
            int(m["total"]),
        ),
    ),
)


def error_words(error: str) -> str:
    """The stored error in the active language, its values as stored; as stored if not recognised."""
    if not error:
        return error
    for pattern, words in _PATTERNS:
        if m := pattern.fullmatch(error):
            return words(m) % m.groupdict()
    return error
