"""An erasure's target in words (`described`), the names of the files it removes and its `error`:
stored in English (the audit log's receipt, the API, `manage.py erase` read them as written) and
shown on the erasure pages in the reader's language (webapp.lib.known_text). webapp.erasure.erasing
and planning format the templates below; the corpus's and project's names, the counts and the
patients' keyed hashes stay as stored. A text not recognised (an older row) is shown as stored.
"""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext_noop

from webapp.lib import known_text
from webapp.lib.known_text import Known, KnownTexts

CORPUS = gettext_noop("corpus %(name)s")
PROJECT = gettext_noop("project %(slug)s")
NOTES = known_text.ngettext("%(notes)s note of %(where)s", "%(notes)s notes of %(where)s", "notes", ("where",))
PATIENTS = known_text.ngettext("%(patients)s patient", "%(patients)s patients", "patients")
PATIENT_NOTES = known_text.ngettext(
    "the %(notes)s note of %(patients)s (%(hashes)s) in %(where)s",
    "the %(notes)s notes of %(patients)s (%(hashes)s) in %(where)s",
    "notes",
    ("patients", "where"),
)
WHOLE = Known(gettext_noop("the whole %(where)s"), words=("where",))

# what is removed outside the database (the "files: <what>" counts)
EXPORT_FOLDERS = gettext_noop("export folders")
UPLOADS = gettext_noop("uploads")
MLFLOW_RUNS = gettext_noop("MLflow runs")
MLFLOW_RUNS_UNSET = gettext_noop("MLflow runs left on a tracking server no longer set")

# the erasure's error (webapp.erasure.erasing.fail)
REFERRED = Known(
    gettext_noop(
        "The erasure stopped: rows of %(tables)s still refer to what it erases. Nothing was left half-deleted; "
        "the rows deleted so far are counted."
    ),
    words=("tables",),
)
ANOTHER_TABLE = gettext_noop("another table")
MLFLOW_FAILED = gettext_noop(
    "The erasure could not delete its MLflow runs (%(reason)s); resume it once the tracking server answers."
)
STORAGE_FAILED = gettext_noop(
    "The erasure could not remove files from the storage (%(reason)s); resume it once it can be reached."
)
UNEXPECTED = gettext_noop(
    "The erasure stopped because of an unexpected error (%(type)s); the worker log has the details under "
    "erasure %(erasure)s. Resume goes on where it stopped."
)


@cache
def texts() -> KnownTexts:
    return KnownTexts(
        [
            PATIENT_NOTES,
            NOTES,
            WHOLE,
            PATIENTS,
            CORPUS,
            PROJECT,
            EXPORT_FOLDERS,
            UPLOADS,
            MLFLOW_RUNS,
            MLFLOW_RUNS_UNSET,
            REFERRED,
            ANOTHER_TABLE,
            MLFLOW_FAILED,
            STORAGE_FAILED,
            UNEXPECTED,
        ]
    )


def shown(text):
    """A stored text of an erasure in the active language; as stored when not recognised."""
    return texts().render(text, translation)
