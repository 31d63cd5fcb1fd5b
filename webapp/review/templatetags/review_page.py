"""Pieces of the note page written once per request however many peak rows repeat them."""

from django import template
from django.template.loader import get_template

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
