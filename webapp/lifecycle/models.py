"""The abstract row every unit of long work inherits: status, who holds it, its heartbeat."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from webapp.lifecycle.status import ACTIVE, ENDED, HELD, RESUMABLE, JobStatus


def stall_seconds() -> int:
    return settings.WORK_STALL_SECONDS


class WorkUnit(models.Model):
    """A unit one worker holds at a time (see webapp.lifecycle). `heartbeat` is the last sign of
    life of the worker holding it, or, while queued, when it was (last) sent to the queue."""

    status = models.CharField(
        max_length=12,
        choices=JobStatus.choices,
        default=JobStatus.QUEUED,
        db_index=True,
        verbose_name=gettext_lazy("status"),
    )
    attempts = models.PositiveSmallIntegerField(
        default=0,
        help_text=gettext_lazy("claims so far; a worker writes only its own"),
        verbose_name=gettext_lazy("attempts"),
    )
    worker = models.CharField(
        max_length=200,
        blank=True,
        help_text=gettext_lazy("the worker that holds it (or held it last)"),
        verbose_name=gettext_lazy("worker"),
    )
    heartbeat = models.DateTimeField(
        null=True,
        blank=True,
        help_text=gettext_lazy("last sign of life of its worker (queued: when it was sent)"),
        verbose_name=gettext_lazy("last sign of life"),
    )
    error = models.TextField(blank=True, verbose_name=gettext_lazy("error"))
    started = models.DateTimeField(null=True, blank=True, verbose_name=gettext_lazy("started"))
    finished = models.DateTimeField(null=True, blank=True, verbose_name=gettext_lazy("finished"))

    class Meta:
        abstract = True

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE

    @property
    def is_done(self) -> bool:
        return self.status == JobStatus.DONE

    @property
    def is_ended(self) -> bool:
        return self.status in ENDED

    def stalled_since(self, now: datetime | None = None) -> datetime | None:
        """When its worker was last heard of, if that worker is lost (held, and silent for
        WORK_STALL_SECONDS); None while it beats, waits or has ended."""
        if self.status not in HELD:
            return None
        last = self.heartbeat or self.started
        if last is None:
            return None
        now = now or timezone.now()
        return last if now - last > timedelta(seconds=stall_seconds()) else None

    @property
    def is_stalled(self) -> bool:
        return self.stalled_since() is not None

    @property
    def resumable(self) -> bool:
        return self.status in RESUMABLE or self.is_stalled

    @property
    def cancellable(self) -> bool:
        return self.status in (JobStatus.PLANNING, JobStatus.QUEUED, JobStatus.RUNNING)

    def status_text(self, now: datetime | None = None) -> str:
        """The status in words, honest about a lost worker: never "running" for a dead one."""
        lost = self.stalled_since(now)
        if lost is not None:
            return _("stalled: worker lost at %(time)s") % {"time": f"{timezone.localtime(lost):%H:%M}"}
        return self.get_status_display()
