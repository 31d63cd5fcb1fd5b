"""Pieces of the note page written once: the selection's hidden fields once per request however
many forms repeat them, the colour scale and the keyboard help once per process and language."""

import threading

from django import template
from django.template.loader import get_template
from django.utils.translation import get_language

from webapp.lib import rendering

register = template.Library()


@register.simple_tag(takes_context=True)
def selection_fields(context):
    """review/_selection_fields.html for the page's selection and round, rendered once per
    selection object (one a request) and repeated in every peak row's form."""
    sel, rnd = context["sel"], context.get("round")
    kept = sel.__dict__.setdefault("_fields_html", {})
    key = (getattr(rnd, "pk", None), sel.query())  # sel.query(): what the fields are made of
    if key not in kept:
        kept[key] = get_template("review/_selection_fields.html").render({"sel": sel, "round": rnd})
    return kept[key]


_legends: dict[tuple, str] = {}
_lock = threading.Lock()


@register.simple_tag(takes_context=True)
def legend_html(context, peaks=False):
    """review/_legend.html (the colour scale: the same on every page of a language), rendered once
    per process, language and `peaks`."""
    key = (get_language(), bool(peaks), context.use_l10n)
    html = _legends.get(key)
    if html is None:
        html = get_template("review/_legend.html").render({"legend": rendering.legend(), "peaks": peaks})
        with _lock:
            _legends[key] = html
    return html


_helps: dict[tuple, str] = {}


@register.simple_tag(takes_context=True)
def help_html(context):
    """review/_help.html (the keyboard help of the note page: words only), rendered once per
    process and language."""
    key = (get_language(), context.use_l10n)
    html = _helps.get(key)
    if html is None:
        html = get_template("review/_help.html").render({})
        with _lock:
            _helps[key] = html
    return html
