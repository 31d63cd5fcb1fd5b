"""Small filters of the training pages. Figures are for a person, in the reader's language (60,3
in Italian and Spanish); nothing parses them back."""

import re
from datetime import timedelta

from django import template
from django.utils.translation import gettext, gettext_noop

from webapp.lifecycle.estimates import decimal

register = template.Library()


@register.filter
def points(value):
    """An F1 in [0, 1] as points with one decimal (0.6031 -> "60.3"); "—" when missing."""
    if value is None or value == "":
        return "—"
    return decimal(f"{100 * float(value):.1f}")


@register.filter
def cell(value):
    """A table cell already in points: one decimal; "—" when missing."""
    if value is None:
        return "—"
    return decimal(f"{value:.1f}") if isinstance(value, float) else value


@register.filter
def duration(seconds):
    if seconds is None:
        return "—"
    return str(timedelta(seconds=round(float(seconds))))


@register.filter
def sci(value):
    if value is None:
        return "—"
    return decimal(f"{float(value):.3g}")


@register.filter
def is_number(value):
    """True for a figure (or an empty figure cell), so the table aligns it to the right."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


# The phases a training worker stores while it holds the run (webapp.training.runs, the labels of
# reporting.set_phase: English, also read by the API), shown in the reader's language; a phase not
# recognised (an old row, a new label) is shown as stored
PHASES = frozenset(
    (
        gettext_noop("queued again"),
        gettext_noop("starting"),
        gettext_noop("reading the dataset"),
        gettext_noop("training"),
        gettext_noop("LoRA SFT"),
        gettext_noop("training the SFT teacher"),
        gettext_noop("training the student on gold + synthetic labels"),
        gettext_noop("labelling unlabeled notes with the teacher"),
        gettext_noop("computing features (cached per model and items)"),
        gettext_noop("training the classification heads"),
        gettext_noop("predicting the test items"),
        gettext_noop("evaluating on the test items"),
    )
)
_SHOTS = re.compile(r"(?P<shots>\d+)-shot prompting")


@register.filter
def run_phase(phase):
    """The run's stored phase in the reader's language (the number of shots as stored)."""
    if not isinstance(phase, str) or not phase:
        return phase
    if phase in PHASES:
        return gettext(phase)
    if m := _SHOTS.fullmatch(phase):
        return gettext("%(shots)s-shot prompting") % m.groupdict()
    return phase


# The lines webapp.training.runs writes into a run's log at each turn of its life (English, as the
# API and the log files keep them), in the reader's language; any other line is shown as stored
_LOG_LINES = (
    (re.compile(r"Cancel requested\."), lambda m: gettext("Cancel requested.")),
    (re.compile(r"Cancelled\."), lambda m: gettext("Cancelled.")),
    (re.compile(r"Resume requested\."), lambda m: gettext("Resume requested.")),
    (
        re.compile(r"Resume requested from the checkpoint of step (?P<step>\d+)\."),
        lambda m: gettext("Resume requested from the checkpoint of step %(step)s."),
    ),
    (
        re.compile(r"Attempt (?P<attempt>\d+) started on this process\."),
        lambda m: gettext("Attempt %(attempt)s started on this process."),
    ),
    (
        re.compile(r"Attempt (?P<attempt>\d+) started on (?P<worker>.+)\.", re.DOTALL),
        lambda m: gettext("Attempt %(attempt)s started on %(worker)s."),
    ),
    (
        re.compile(r"Cancelled; Resume continues from the last checkpoint\."),
        lambda m: gettext("Cancelled; Resume continues from the last checkpoint."),
    ),
    (
        re.compile(r"Cancelled at step (?P<step>\d+); Resume continues from the last checkpoint\."),
        lambda m: gettext("Cancelled at step %(step)s; Resume continues from the last checkpoint."),
    ),
)


@register.filter
def run_log(message):
    """A line of the run's log in the reader's language (its step, attempt and worker as stored)."""
    if not isinstance(message, str):
        return message
    for pattern, words in _LOG_LINES:
        if m := pattern.fullmatch(message):
            return words(m) % m.groupdict()
    return message
