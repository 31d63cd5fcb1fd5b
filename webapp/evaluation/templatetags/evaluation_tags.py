"""Number formats of the evaluation pages: three decimals (with the reader's language's decimal
mark), intervals, an em dash where undefined; the gold's origins and the worker's phase in words."""

import math
import re

from django import template
from django.utils.translation import gettext_lazy, ngettext

from webapp.evaluation import reason_text
from webapp.evaluation.gold_sources import ORIGINS
from webapp.evaluation.presentation import stored_label
from webapp.lifecycle.estimates import decimal
from webapp.pipeline.models import RelevanceJob

register = template.Library()


def _defined(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@register.filter
def num3(value) -> str:
    return decimal(f"{value:.3f}") if _defined(value) else "—"


@register.filter
def interval(values) -> str:
    """[low, high] -> "0.512–0.611"; "—" when either end is undefined."""
    if not values or len(values) != 2 or not all(_defined(v) for v in values):
        return "—"
    return f"{decimal(f'{values[0]:.3f}')}–{decimal(f'{values[1]:.3f}')}"


@register.filter
def method_label(code) -> str:
    """A relevance method's code ("attnlrp") as its label in the reader's language, as the job list
    shows it; a code no longer registered is shown as stored."""
    return str(dict(RelevanceJob.Method.choices).get(code, code))


@register.filter
def explain_label(code) -> str:
    """An explain variant's code ("span") as its label in the reader's language; unknown: as stored."""
    return str(dict(RelevanceJob.Explain.choices).get(code, code))


@register.filter
def gold_origins(result) -> list[dict]:
    """The result's `gold_origins` as [{"origin", "words", "spans", "pairs"}], known origins first
    (empty for a result stored before origins were counted)."""
    found = (result or {}).get("gold_origins") or {}
    order = [o for o in ORIGINS if o in found] + sorted(o for o in found if o not in ORIGINS)
    return [{"origin": o, "words": ORIGINS.get(o, o), **found[o]} for o in order]


# The phases the worker stores (webapp.evaluation.evaluations, running: English, also read by the API),
# in the reader's language; a phase not recognised is shown as stored
PHASES = {
    "queued again": gettext_lazy("queued again"),
    "starting": gettext_lazy("starting"),
    "scoring": gettext_lazy("scoring"),
    "done": gettext_lazy("done"),
    "cancelled: Resume continues where it stopped": gettext_lazy("cancelled: Resume continues where it stopped"),
    "waiting to retry after a temporary problem": gettext_lazy("waiting to retry after a temporary problem"),
    "waiting for a worker that can load the model": gettext_lazy("waiting for a worker that can load the model"),
}
_STORED = re.compile(r"(?P<done>\d+) of (?P<total>\d+) prompts already stored")
_COMPUTING = re.compile(r"computing (?P<config>.+) \(configuration (?P<index>\d+) of (?P<count>\d+)\)")
_SCORING = re.compile(r"scoring: (?P<done>\d+) of (?P<total>\d+) pairs")
_FAITHFULNESS = re.compile(r"faithfulness: (?P<done>\d+) of (?P<total>\d+) pairs")
_FAITHFULNESS_OF = re.compile(
    r"faithfulness of (?P<config>.+) \(configuration (?P<index>\d+) of (?P<count>\d+)\): "
    r"(?P<done>\d+) of (?P<total>\d+) pairs"
)


@register.filter
def phase_words(phase) -> str:
    """The stored phase in the reader's language (the numbers and configuration as stored)."""
    if not isinstance(phase, str) or not phase:
        return phase
    if phase in PHASES:
        return str(PHASES[phase])
    if m := _STORED.fullmatch(phase):
        text = ngettext(
            "%(done)s of %(total)s prompts already stored",
            "%(done)s of %(total)s prompts already stored",
            int(m["total"]),
        )
    elif m := _COMPUTING.fullmatch(phase):
        text = ngettext(
            "computing %(config)s (configuration %(index)s of %(count)s)",
            "computing %(config)s (configuration %(index)s of %(count)s)",
            int(m["count"]),
        )
    elif m := _SCORING.fullmatch(phase):
        text = ngettext("scoring: %(done)s of %(total)s pairs", "scoring: %(done)s of %(total)s pairs", int(m["total"]))
    elif m := _FAITHFULNESS.fullmatch(phase):
        text = ngettext(
            "faithfulness: %(done)s of %(total)s pairs", "faithfulness: %(done)s of %(total)s pairs", int(m["total"])
        )
    elif m := _FAITHFULNESS_OF.fullmatch(phase):
        text = ngettext(
            "faithfulness of %(config)s (configuration %(index)s of %(count)s): %(done)s of %(total)s pairs",
            "faithfulness of %(config)s (configuration %(index)s of %(count)s): %(done)s of %(total)s pairs",
            int(m["total"]),
        )
    else:
        return phase
    values = m.groupdict()
    if "config" in values:
        values["config"] = stored_label(values["config"])
    return text % values


@register.filter
def reason_words(recommendation) -> str:
    """The recommendation's reason in the reader's language (webapp.evaluation.reason_text)."""
    return reason_text.reason(recommendation)


@register.filter
def measurement_names(names) -> list[str]:
    return reason_text.measurements(names)


@register.filter
def not_used_words(recommendation) -> list[tuple[str, str]]:
    """[(measurement, why it was not used)] in the reader's language."""
    return reason_text.not_used(recommendation)


@register.filter
def skipped_words(line) -> str:
    """A skipped pair's line in the reader's language, its ids and a model's own words as stored."""
    return reason_text.skipped(line)


@register.filter
def evaluation_error(text) -> str:
    """The evaluation's stored error in the reader's language (webapp.evaluation.reason_text.error)."""
    return reason_text.error(text)
