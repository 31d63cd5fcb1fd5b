"""The statuses every unit of work goes through (webapp.lifecycle)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class JobStatus(models.TextChoices):
    PLANNING = "planning", _("Planning")  # relevance jobs only: chunks being written by a worker
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    CANCELLING = "cancelling", _("Cancelling")
    CANCELLED = "cancelled", _("Cancelled")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")


WAITING = (JobStatus.QUEUED,)
HELD = (JobStatus.RUNNING, JobStatus.CANCELLING)  # a worker holds the unit and beats
ACTIVE = (JobStatus.PLANNING, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING)
ENDED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)
RESUMABLE = (JobStatus.CANCELLED, JobStatus.FAILED)


def choice_word(instance, field: str) -> str:
    """A choice field's value as a row's __str__ names it: its label in the active language, in lower
    case, which in English is the stored code itself ("done", "train")."""
    return str(getattr(instance, f"get_{field}_display")()).lower()
