"""What webapp.lifecycle (recovery, ended) and workers.runner write into a unit's `error` while it
waits or after it failed, as they write it (English, also read by the API), for the pages that show
it in the reader's language (webapp.lib.known_text tables: webapp.training.log_text,
webapp.evaluation.reason_text). Change a text there, change it here."""

from django.utils.translation import gettext_noop

from webapp.lib.known_text import Known

LIFECYCLE = (
    Known(gettext_noop("%(first)s Its open database sessions were ended."), words=("first",)),
    gettext_noop(
        "Worker %(worker)s was lost at %(time)s (no heartbeat for %(seconds)s s); queued again automatically."
    ),
    gettext_noop("Worker %(worker)s was lost (no heartbeat for %(seconds)s s); queued again automatically."),
    gettext_noop("A temporary problem (%(type)s); trying again."),
    gettext_noop(
        "The worker stopped on a temporary problem (%(type)s) it could not record at the time; queued again "
        "automatically."
    ),
)
