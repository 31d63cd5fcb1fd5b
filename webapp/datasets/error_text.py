"""A dataset build's and an export's `error`, as webapp.datasets.building and export (and
webapp.lifecycle) write them: English, also read by the API; shown on the dataset's page in the
reader's language (webapp.lib.known_text). What a disk said and an exception's own words stay as
stored; a text not recognised is shown as stored. Change a text there, change it here."""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext_noop

from webapp.lib.known_text import Known, KnownTexts
from webapp.lifecycle import said

ERRORS = (
    Known(
        gettext_noop(
            "The build stopped: %(full)s (%(type)s). No examples were kept. Free some space, then build again."
        ),
        words=("full",),
    ),
    gettext_noop(
        "The build stopped because of an unexpected error (%(type)s). No examples were kept. The worker log has "
        "the details under dataset %(dataset)s; building again may work if the cause was temporary."
    ),
    gettext_noop(
        "The export could not be put in the shared storage (%(reason)s); prepare it again once it can be reached."
    ),
    Known(
        gettext_noop(
            "The export stopped: %(full)s (%(type)s). Free some space under the data folder, then prepare it again."
        ),
        words=("full",),
    ),
    gettext_noop(
        "The export stopped because of an unexpected error (%(type)s). The worker log has the details under "
        "export %(export)s; preparing it again may work."
    ),
    # webapp.lib.disk.disk_full
    gettext_noop("no space left on device"),
    gettext_noop("disk quota exceeded"),
    gettext_noop("no space left on the database server's disk"),
    *said.LIFECYCLE,
)


@cache
def texts() -> KnownTexts:
    return KnownTexts(ERRORS)


def shown(text):
    """A build's or an export's stored error in the active language; as stored when not recognised."""
    return texts().render(text, translation)
