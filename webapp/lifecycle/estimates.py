"""How much work a launch form asks for, and about how long it takes, before anything is created.

Every launch form (relevance job, dataset build, training run, evaluation) asks for an
`Estimate`: the amount of work in its natural unit (prompts, maps, steps) and, when earlier work
of the same model on the same queue was measured, the time it takes one worker of that queue.
The rate is always measured, never guessed: when there is no earlier work to measure, the
estimate says so in `basis` and gives no time.

This module holds only what every form shares: the `Estimate`, the rate (`from_rate`, `elapsed`),
the durations in words and the confirmation. Each app computes its own work's estimate with them,
in its own `estimates.py`: webapp.pipeline (relevance jobs), webapp.datasets (dataset builds),
webapp.training (training runs), webapp.evaluation (evaluations). The apps import this module,
never the other way round.

"This kind of worker" is the queue the work is routed to (settings.CELERY_TASK_ROUTES): the
deployment decides which machines (CPU or GPU) serve each queue, so rates measured on a queue
hold for its next work. A unit does not record its device, so one queue served by CPU and GPU
workers at once averages both.

Cheap by construction: each rate reads at most RATE_SAMPLE recent rows of its own table (jobs,
builds, runs, evaluations; never relevance chunks) through the counters those rows keep.

Above settings.LAUNCH_CONFIRM_SECONDS (or, with no measured rate, above
settings.LAUNCH_CONFIRM_AMOUNT units) a launch needs a second, explicit confirmation: the view
re-renders the form with the estimate and a confirm button that posts `confirmed`, the amount shown,
and launches only when the posted amount covers the amount asked for now.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from django.conf import settings
from django.utils.formats import get_format, number_format
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, npgettext, pgettext

RATE_SAMPLE = 5  # most recent measured units of work a rate is taken from
CONFIRM_FIELD = "confirmed"


@dataclass(frozen=True)
class Estimate:
    amount: int  # units of work asked for
    unit: str  # "prompts", "maps", "steps"
    seconds: float | None  # on one worker of `queue`; None: no measured rate yet
    basis: str  # where the rate came from, in plain words
    queue: str = ""  # the queue whose workers do the work

    @property
    def needs_confirmation(self) -> bool:
        if self.seconds is not None:
            return self.seconds > settings.LAUNCH_CONFIRM_SECONDS
        return self.amount > settings.LAUNCH_CONFIRM_AMOUNT

    @property
    def size(self) -> str:
        """The amount in words ("12,400 prompts"), in the reader's language."""
        return amount_in_words(self.amount, self.unit)

    @property
    def duration(self) -> str:
        """The time in words ("about 2 h 05 min"), "unknown" without a measured rate."""
        if self.seconds is None:
            return _("unknown")
        return _("about %(time)s") % {"time": in_words(self.seconds)}

    @property
    def worker(self) -> str:
        return _("one worker of the %(queue)s queue") % {"queue": self.queue} if self.queue else _("one worker")

    @property
    def question(self) -> str:
        """The confirmation asked before a large launch."""
        if self.seconds is None:
            return _("This is %(size)s, and no time can be estimated yet (%(basis)s). Launch it?") % {
                "size": self.size,
                "basis": self.basis,
            }
        return _("This is %(size)s, %(duration)s on %(worker)s. Launch it?") % {
            "size": self.size,
            "duration": self.duration,
            "worker": self.worker,
        }

    def html(self, text: str) -> SafeString:
        """`text` for a page: escaped, the queue's name written as code (<code>relevance</code>),
        so it reads as a name in every language."""
        escaped = str(escape(text))
        if not self.queue:
            return mark_safe(escaped)
        name = str(escape(self.queue))
        return mark_safe(re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", f"<code>{name}</code>", escaped))

    @property
    def worker_html(self) -> SafeString:
        return self.html(self.worker)

    @property
    def basis_html(self) -> SafeString:
        return self.html(self.basis)

    @property
    def question_html(self) -> SafeString:
        return self.html(self.question)

    def confirmed_by(self, posted) -> bool:
        """True when it needs no confirmation, or `posted` (request.POST) confirms at least this
        amount: changing the form after confirming a smaller launch asks again."""
        if not self.needs_confirmation:
            return True
        try:
            return int(posted.get(CONFIRM_FIELD) or 0) >= self.amount
        except ValueError:
            return False


def waits_for_confirmation(estimate: Estimate | None, posted) -> bool:
    """A launch form's test: True while a large launch has not been confirmed (no estimate: the
    work has no amount to confirm, it launches as before)."""
    return estimate is not None and not estimate.confirmed_by(posted)


def grouped(number: int) -> str:
    """A whole number with the reader's language's thousands separator ("12,400", "12.400")."""
    return number_format(number, force_grouping=True)


def decimal(text: str) -> str:
    """A number already written ("2.5", "1.23e+04") with the reader's language's decimal mark."""
    return text.replace(".", get_format("DECIMAL_SEPARATOR"))


def amount_in_words(amount: int, unit: str) -> str:
    """ "12,400 prompts": the English keeps its plural for 1 ("1 maps"), as it always did; the
    translations say it their way. A unit not listed here keeps its English word."""
    number = grouped(amount)
    if unit == "prompts":
        return ngettext("%(count)s prompts", "%(count)s prompts", amount) % {"count": number}
    if unit == "maps":
        return ngettext("%(count)s maps", "%(count)s maps", amount) % {"count": number}
    if unit == "steps":
        return ngettext("%(count)s steps", "%(count)s steps", amount) % {"count": number}
    return f"{number} {unit}"


def unit_name(unit: str) -> str:
    """The unit's plural, in the reader's language, for a rate ("prompts/s")."""
    names = {
        "prompts": pgettext("unit of work", "prompts"),
        "maps": pgettext("unit of work", "maps"),
        "steps": pgettext("unit of work", "steps"),
    }
    return names.get(unit, unit)


def work_in_words(work: str, count: int) -> str:
    """Earlier work ("job", "build", "evaluation", "dsm run"), singular or plural, in the reader's
    language; the kind of a run ("dsm") is a name and stays as it is."""
    if work == "job":
        return npgettext("earlier work", "job", "jobs", count)
    if work == "build":
        return npgettext("earlier work", "build", "builds", count)
    if work == "evaluation":
        return npgettext("earlier work", "evaluation", "evaluations", count)
    if work.endswith(" run"):
        kind = work.removesuffix(" run")
        return npgettext("earlier work", "%(kind)s run", "%(kind)s runs", count) % {"kind": kind}
    return f"{work}{'' if count == 1 else 's'}"


def in_words(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return _("%(seconds)s s") % {"seconds": seconds}
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return _("%(minutes)s min") % {"minutes": minutes}
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return _("%(hours)s h %(minutes)s min") % {"hours": hours, "minutes": f"{minutes:02d}"}
    return _("%(days)s days") % {"days": number_format(seconds / 86400, 1)}


def from_rate(amount: int, unit: str, samples: list[tuple[float, float]], *, work: str, queue_name: str) -> Estimate:
    """An estimate from measured (units, seconds) of earlier `work` ("job", "dsm run") of this
    model on the queue `queue_name`."""
    measured = [(done, seconds) for done, seconds in samples if done and seconds and seconds > 0]
    if not measured:
        basis = _("no measured rate yet for %(work)s of this model on the %(queue)s queue") % {
            "work": work_in_words(work, 2),
            "queue": queue_name,
        }
        return Estimate(amount, unit, None, basis, queue_name)
    rate = sum(done for done, _done in measured) / sum(seconds for _done, seconds in measured)
    count = len(measured)
    basis = ngettext(
        "measured on %(count)s earlier %(work)s of this model on the %(queue)s queue (%(rate)s %(unit)s/s)",
        "measured on %(count)s earlier %(work)s of this model on the %(queue)s queue (%(rate)s %(unit)s/s)",
        count,
    ) % {
        "count": count,
        "work": work_in_words(work, count),
        "queue": queue_name,
        "rate": decimal(f"{rate:.3g}"),
        "unit": unit_name(unit),
    }
    return Estimate(amount, unit, amount / rate, basis, queue_name)


def elapsed(rows) -> list[tuple[float, float]]:
    """(units, seconds) from (units, started, finished) rows."""
    return [(units, (finished - started).total_seconds()) for units, started, finished in rows if started and finished]
