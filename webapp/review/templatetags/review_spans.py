"""The note panel's spans the model missed and its accept-the-rest button: `{% added_spans %}`
reads the panel's note, task and reviewer from the page's context (webapp.review.spans), so the
note view stays as it is.

A pair nearly always has no added span. The section is then the same for every request of a
language, a role that may review or not, and a map with peaks or not, but for a few values (the
note's addresses, the CSRF token, the selection's fields, the window, the guideline version, the
note's length and the count of undecided peaks): it is written once per process and key with
stand-ins for them (webapp.accounts.stencil), which cost some 60 template nodes a first visit.
With spans to list, the template is rendered as it is.
"""

from django import template
from django.template.loader import render_to_string
from django.urls import get_script_prefix, reverse
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe
from django.utils.translation import get_language, ngettext

from webapp.accounts.stencil import CSRF_INPUT, CSRF_TOKEN, Stencil, csrf_input, stand_in
from webapp.db.prepared import Prepared
from webapp.review import spans
from webapp.review.models import AddedSpan
from webapp.review.templatetags.review_page import selection_fields

register = template.Library()

QUOTE_CHARS = 140
TEMPLATE = "review/_added_spans.html"
_SECTION = Stencil(TEMPLATE)
# the request's values, stood in for while the stencil is written
_FILLED = ("add_url", "accept_rest_url", "fields_html", "window_index", "guideline_version", "n_chars", "rest",
           "rest_disabled", "rest_label", "task_description")  # fmt: skip


@register.simple_tag(takes_context=True)
def added_spans(context):
    note, sel = context["note"], context["sel"]
    if sel.task is None:
        return ""
    can_review = bool(context.get("can_review"))
    rows = list(spans.of_pair(note, sel.task)) if _any_added(note, sel.task) else []
    values = section_values(context)
    if rows:
        return mark_safe(render_to_string(TEMPLATE, listing(context, rows, values)))
    key = (get_language(), get_script_prefix(), can_review, bool(values["add_url"]), bool(values["accept_rest_url"]))
    stand_ins = {name: stand_in(name) for name in _FILLED}

    def stencil_context():
        # every value a stand-in, but the form addresses the key says are absent (they decide
        # whether a form is written at all)
        written = {name: mark_safe(stand_ins[name]) for name in _FILLED}
        written.update({name: "" for name in ("add_url", "accept_rest_url") if not values[name]})
        return {**written, "can_review": can_review, "csrf_token": CSRF_TOKEN}

    fills = {stand_ins[name]: conditional_escape(value) for name, value in values.items()}  # as {{ }} writes them
    return _SECTION.html(key, stencil_context, {**fills, CSRF_INPUT: csrf_input(context)})


def section_values(context) -> dict:
    """The request's values in the section (escaped where they are text)."""
    note, sel, panel = context["note"], context["sel"], context["panel"]
    can_review = bool(context.get("can_review"))
    rest = max(0, panel.n_peaks - panel.decided) if panel.found and panel.fits else 0
    label = ngettext("Accept the rest: %(n)s undecided peak", "Accept the rest: %(n)s undecided peaks", rest)
    guideline = context.get("guideline")
    args = [note.corpus_id, note.pk]
    return {
        "add_url": reverse("review:add_span", args=args) if can_review else "",
        "accept_rest_url": reverse("review:accept_rest", args=args) if can_review and panel.n_peaks else "",
        "fields_html": selection_fields(context),
        "window_index": str(panel.window.index),
        "guideline_version": str(getattr(guideline, "version", None) or 0),
        "n_chars": str(panel.n_chars),
        "rest": str(rest),
        "rest_disabled": "" if rest else " disabled",
        "rest_label": conditional_escape(label % {"n": rest}),
        "task_description": conditional_escape(sel.task.description),
    }


def listing(context, rows, values) -> dict:
    """The template's context with the pair's spans `rows` to list (none: the stencil's page)."""
    note, user_id = context["note"], context["request"].user.pk
    for row in rows:
        row.quote = " ".join(note.text[row.start : min(row.end, row.start + QUOTE_CHARS)].split())
    return {
        **values,
        "csrf_token": context.get("csrf_token"),
        "note": note,
        "corpus": context["corpus"],
        "can_review": bool(context.get("can_review")),
        "mine": [row for row in rows if row.reviewer_id == user_id],
        "others": [row for row in rows if row.reviewer_id != user_id],
    }


def _added(_shape, *, note_id, task_id):
    return AddedSpan.objects.filter(note_id=note_id, task_id=task_id).values_list("pk")[:1]


_ANY_ADDED = Prepared(_added)  # webapp.db.prepared: the usual answer (none) without building a queryset


def _any_added(note, task) -> bool:
    return bool(_ANY_ADDED.rows(None, note_id=note.pk, task_id=task.pk))
