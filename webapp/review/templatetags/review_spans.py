"""The note panel's spans the model missed and its accept-the-rest button: `{% added_spans %}`
reads the panel's note, task and reviewer from the page's context (webapp.review.spans), so the
note view stays as it is."""

from django import template

from webapp.db.prepared import Prepared
from webapp.review import spans
from webapp.review.models import AddedSpan

register = template.Library()

QUOTE_CHARS = 140


@register.inclusion_tag("review/_added_spans.html", takes_context=True)
def added_spans(context):
    note, sel, panel = context["note"], context["sel"], context["panel"]
    request = context["request"]
    rows = list(spans.of_pair(note, sel.task)) if sel.task is not None and _any_added(note, sel.task) else []
    for row in rows:
        row.quote = " ".join(note.text[row.start : min(row.end, row.start + QUOTE_CHARS)].split())
    mine = [row for row in rows if row.reviewer_id == request.user.pk]
    return {
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "note": note,
        "corpus": context["corpus"],
        "sel": sel,
        "panel": panel,
        "round": context.get("round"),
        "guideline": context.get("guideline"),
        "can_review": context.get("can_review"),
        "mine": mine,
        "others": [row for row in rows if row.reviewer_id != request.user.pk],
        "rest": max(0, panel.n_peaks - panel.decided) if panel.found and panel.fits else 0,
    }


def _added(_shape, *, note_id, task_id):
    return AddedSpan.objects.filter(note_id=note_id, task_id=task_id).values_list("pk")[:1]


_ANY_ADDED = Prepared(_added)  # webapp.db.prepared: the usual answer (none) without building a queryset


def _any_added(note, task) -> bool:
    return bool(_ANY_ADDED.rows(None, note_id=note.pk, task_id=task.pk))
