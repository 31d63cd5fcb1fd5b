"""A de-identification job's and a scan's `error`, as webapp.deid_ops.jobs and deidentifying (and
webapp.lifecycle) write them, and why an export was not scanned (webapp.deid_ops.scanning): English,
also read by the API; shown on their pages in the reader's language (webapp.lib.known_text). A
policy's own words and an error's type stay as stored; a text not recognised is shown as stored.
Change a text there, change it here."""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext_noop

from webapp.deid_ops import scanning
from webapp.lib.known_text import KnownTexts
from webapp.lifecycle import said

ERRORS = (
    gettext_noop("The corpus it reads was erased; nothing more can be copied."),
    gettext_noop("The corpus it fills was erased; nothing more can be copied."),
    gettext_noop(
        "The job stopped on an unexpected error (%(type)s); the worker log has the details under deid job "
        "%(job)s. Resume goes on where it stopped."
    ),
    *said.LIFECYCLE,
    gettext_noop("%(reason)s Resume once it is corrected."),  # a policy's or a scan's own words first
    scanning.NOT_MADE,  # an export's residual scan that did not run
    scanning.STOPPED,
)


@cache
def texts() -> KnownTexts:
    return KnownTexts(ERRORS)


def shown(text):
    """A job's stored error in the active language; as stored when not recognised."""
    return texts().render(text, translation)
