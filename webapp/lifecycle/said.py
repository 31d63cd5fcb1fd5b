"""What webapp.lifecycle (recovery, ended) and workers.runner write into a unit's `error` while it
waits or after it failed, as they write it (English, also read by the API), for the pages that show
it in the reader's language (webapp.lib.known_text tables: webapp.training.log_text,
webapp.evaluation.reason_text). Change a text there, change it here."""

from django.utils.translation import gettext_noop

from webapp.lib import known_text
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
    # kinds.Retry.gave_up and queue.send_on_commit's error (webapp.pipeline.error_text has them too)
    known_text.ngettext(
        "Stopped by a temporary problem (%(type)s) that did not go away after %(retries)s retries. "
        "Press Resume to try again.",
        "Stopped by a temporary problem (%(type)s) that did not go away after %(retries)s retries. "
        "Press Resume to try again.",
        "retries",
    ),
    known_text.ngettext(
        "The task queue could not be reached (%(type)s); %(sent)s of %(total)s messages were sent. Work that "
        "was not sent is sent again automatically once the queue is back (or press Resume).",
        "The task queue could not be reached (%(type)s); %(sent)s of %(total)s messages were sent. Work that "
        "was not sent is sent again automatically once the queue is back (or press Resume).",
        "total",
    ),
)
