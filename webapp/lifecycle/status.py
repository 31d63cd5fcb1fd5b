"""The statuses every unit of work goes through (webapp.lifecycle)."""

from django.db import models


class JobStatus(models.TextChoices):
    PLANNING = "planning", "Planning"  # relevance jobs only: chunks being written by a worker
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    CANCELLING = "cancelling", "Cancelling"
    CANCELLED = "cancelled", "Cancelled"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


WAITING = (JobStatus.QUEUED,)
HELD = (JobStatus.RUNNING, JobStatus.CANCELLING)  # a worker holds the unit and beats
ACTIVE = (JobStatus.PLANNING, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING)
ENDED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)
RESUMABLE = (JobStatus.CANCELLED, JobStatus.FAILED)
