"""An import's problems as its page shows them, in the reader's language, and as the API and the
download give them, in English.

An import runs in a worker, with no reader and so no language: it stores each problem as its
template and values (webapp.lib.problems.Problem.as_json: {"source", "line", "message", "params"}),
or, past the lines shown, {"more", "total", "what"}. A page translates the template where it shows
it; the file's name, the line, the id and the sizes are shown as they are. A row stored before
problems were kept this way holds plain English lines, shown as they are.
"""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext, gettext_noop, ngettext

from webapp.lib import known_text
from webapp.lib.known_text import KnownTexts
from webapp.lib.messages import Message
from webapp.lib.problems import Problem
from webapp.lifecycle import said

# Sources that are words, not files: a gold import's preview lines come after "Preview only".
WORDS = (gettext_noop("Preview only"),)


def _translated(template: str) -> str:
    return gettext(template) if template else template  # gettext("") is the catalog's header


def shown(item) -> str:
    """A stored problem in the active language."""
    if not isinstance(item, dict):
        return str(item)
    if "more" in item:
        values = {"more": item["more"], "total": item["total"]}
        if item.get("what") == "warnings":
            return (
                ngettext(
                    "... and %(more)s more warning (%(total)s in all)",
                    "... and %(more)s more warnings (%(total)s in all)",
                    item["more"],
                )
                % values
            )
        return (
            ngettext(
                "... and %(more)s more problem (%(total)s in all)",
                "... and %(more)s more problems (%(total)s in all)",
                item["more"],
            )
            % values
        )
    text = Message.from_json(item).render(_translated)
    source = str(item.get("source", ""))
    if source in WORDS:
        source = gettext(source)
    if item.get("line") is None:
        return f"{source}: {text}"
    return gettext("%(source)s line %(line)s: %(message)s") % {
        "source": source,
        "line": item["line"],
        "message": text,
    }


def english(item) -> str:
    """A stored problem as the English line it always was (the API, the download, the audit log)."""
    if not isinstance(item, dict):
        return str(item)
    if "more" in item:
        return f"... and {item['more']} more {item.get('what', 'problems')} ({item['total']} in all)"
    text = Message.from_json(item)
    return str(Problem(item.get("source", ""), item.get("line"), text.template, text.params))


def shown_lines(items) -> list[str]:
    return [shown(item) for item in items]


def english_lines(items) -> list[str]:
    return [english(item) for item in items]


def source_of(item) -> str:
    """The file (or "Preview only") a stored problem names: an old row's line up to its first colon."""
    if isinstance(item, dict):
        return str(item.get("source", ""))
    return str(item).split(":", 1)[0]


# An import job's `error`, as webapp.corpus.import_jobs and webapp.lifecycle write it (English, also
# read by the API), for its page in the reader's language (webapp.lib.known_text)
IMPORT_ERRORS = (
    known_text.ngettext(
        "Nothing was imported: %(count)s problem.", "Nothing was imported: %(count)s problems.", "count"
    ),
    gettext_noop(
        "Nothing was imported: the shared storage of uploads failed (%(reason)s). Upload the file again once the "
        "storage can be reached."
    ),
    gettext_noop(
        "The import stopped on an unexpected error (%(type)s); nothing was imported. Try again, or import the "
        "file from the command line to see more."
    ),
    *said.LIFECYCLE,
)


@cache
def _errors() -> KnownTexts:
    return KnownTexts(IMPORT_ERRORS)


def error(text):
    """An import job's stored error in the active language; as stored when not recognised."""
    return _errors().render(text, translation)
