"""Number formats of the evaluation pages: three decimals, intervals, an em dash where undefined."""

import math

from django import template

register = template.Library()


def _defined(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@register.filter
def num3(value) -> str:
    return f"{value:.3f}" if _defined(value) else "—"


@register.filter
def interval(values) -> str:
    """[low, high] -> "0.512–0.611"; "—" when either end is undefined."""
    if not values or len(values) != 2 or not all(_defined(v) for v in values):
        return "—"
    return f"{values[0]:.3f}–{values[1]:.3f}"
