"""Pages of spans the model missed and of accepting the rest, on the note page. Each view: the
access helper (404 outside the project, 403 for a role that may not review), one domain call, the
note panel back (webapp.review.views.after_post: htmx gets the panel, a plain form a redirect)."""

from django.shortcuts import render
from django.views.decorators.http import require_POST

from webapp.projects.roles import Capability
from webapp.review import access, selection, span_actions
from webapp.review.views import after_post


@require_POST
def add_span(request, corpus_id, note_id):
    note = access.note_for(request.user, corpus_id, note_id, Capability.REVIEW)
    task = access.task_for(note, request.POST.get("task"))
    rnd = access.round_of_form(request.user, request.POST.get("round"))
    if rnd is not None and rnd.corpus_id != note.corpus_id:
        rnd = None  # a round of another corpus of the project does not hold this note
    return after_post(request, note, span_actions.add(note, task, request.user, request.POST, rnd))


@require_POST
def edit_span(request, corpus_id, note_id, span_id):
    row = access.added_span_for(request.user, corpus_id, note_id, span_id)
    return after_post(request, row.note, span_actions.edit(row, request.user, request.POST))


@require_POST
def remove_span(request, corpus_id, note_id, span_id):
    row = access.added_span_for(request.user, corpus_id, note_id, span_id)
    return after_post(request, row.note, span_actions.remove(row, request.user))


@require_POST
def accept_rest(request, corpus_id, note_id):
    """Without `confirm=yes`: a page that names how many peaks would be accepted and asks (the
    page's key asks in the browser and posts the count it named)."""
    note = access.note_for(request.user, corpus_id, note_id, Capability.REVIEW)
    outcome, count = span_actions.accept_rest(note, request.POST, request.user)
    if count is not None:
        context = {
            "nav": "review",
            "note": note,
            "corpus": note.corpus,
            "sel": selection.for_note(note, request.POST),
            "count": count,
            "fields": [(k, v) for k, v in request.POST.items() if k not in ("csrfmiddlewaretoken", "confirm", "count")],
        }
        return render(request, "review/accept_rest_confirm.html", context)
    return after_post(request, note, outcome)
