"""Small filters of the training pages. Figures are for a person, in the reader's language (60,3
in Italian and Spanish); nothing parses them back."""

from datetime import timedelta

from django import template

from webapp.lifecycle.estimates import decimal
from webapp.training import log_text

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


@register.filter
def run_phase(phase):
    """The run's stored phase (webapp.training.log_text: English, also read by the API) in the reader's
    language (the number of shots as stored); a phase not recognised is shown as stored."""
    return log_text.shown(phase)


@register.filter
def run_log(message):
    """A line of the run's log, or its error, in the reader's language (webapp.training.log_text: its
    steps, counts, names and an exception's own words as stored)."""
    return log_text.shown(message)
