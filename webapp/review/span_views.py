"""Pages of spans the model missed and of accepting the rest, on the note page. Each view: the
access helper (404 outside the project, 403 for a role that may not review), one domain call, the
note panel back (webapp.review.views.after_post: htmx gets the panel, a plain form a redirect)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from webapp.corpus.tasks import current_guideline
from webapp.projects.roles import Capability
from webapp.review import access, selection, span_actions, span_rounds
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


def adjudicate_spans(request, round_id):
    """Curators settle the groups of added spans a round's reviewers disagree on, one at a time."""
    rnd = access.round_for(request.user, round_id, Capability.ADJUDICATE)
    url = reverse("review:adjudicate_spans", args=[rnd.pk])
    if request.method == "POST":
        try:
            chosen = request.POST.get("chosen", "")
            span_rounds.adjudicate(
                rnd,
                request.user,
                note_id=int(request.POST["note"]),
                task_id=int(request.POST["task"]),
                start=int(request.POST["start"]),
                end=int(request.POST["end"]),
                decision=request.POST.get("decision", ""),
                chosen=tuple(int(x) for x in chosen.split("-")) if chosen else None,
                comment=request.POST.get("comment", ""),
            )
        except (KeyError, ValueError, span_rounds.SpanAdjudicationError) as exc:
            messages.error(request, _("Not recorded: %(reason)s") % {"reason": exc})
            return redirect(f"{url}?span={request.POST.get('index', 0)}")
        return redirect(url)
    groups = span_rounds.disputed(rnd)
    index = _int(request.GET.get("span"))
    if index is None or not 0 <= index < len(groups):
        index = next((i for i, g in enumerate(groups) if g.adjudication is None), 0)
    group = groups[index] if groups else None
    for span in group.spans if group else ():
        span.quote = group.pair.note.text[span.start : span.end]
    context = {
        "nav": "review",
        "round": rnd,
        "corpus": rnd.corpus,
        "groups": groups,
        "settled": sum(g.adjudication is not None for g in groups),
        "index": index,
        "group": group,
        "excerpt": span_rounds.excerpt(group) if group else "",
        "variants": [(a, b, group.pair.note.text[a:b]) for a, b in group.variants] if group else [],
        "guideline": current_guideline(group.pair.task, rnd.corpus.project_id) if group else None,
    }
    return render(request, "review/adjudicate_spans.html", context)


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
