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
