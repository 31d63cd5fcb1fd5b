"""Number formats of the evaluation pages: three decimals, intervals, an em dash where undefined;
the gold's origins in words."""

import math

from django import template

from webapp.evaluation.gold_sources import ORIGINS

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


@register.filter
def gold_origins(result) -> list[dict]:
    """The result's `gold_origins` as [{"origin", "words", "spans", "pairs"}], known origins first
    (empty for a result stored before origins were counted)."""
    found = (result or {}).get("gold_origins") or {}
    order = [o for o in ORIGINS if o in found] + sorted(o for o in found if o not in ORIGINS)
    return [{"origin": o, "words": ORIGINS.get(o, o), **found[o]} for o in order]
