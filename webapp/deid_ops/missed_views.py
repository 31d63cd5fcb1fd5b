"""The review page's missed identifier (key `i`): POST the note, the span's offsets, the type and
the content hash of the text they were read from; webapp.deid_ops.missed replaces it. The answer is
the review page's own (webapp.review.views.after_post): the note panel under the same selection
and window for htmx, with a message that says how many notes and occurrences changed and that
the maps are being recomputed; a redirect back to the note for a plain form.

Who: whoever may review the note's project (Capability.REVIEW: clinicians, admins). The note is
fetched through the access layer by the id the form names: a note of a project the user is not a
member of is a 404, as one that does not exist; a member who may not review gets a 403.
Neither the value nor any part of the note's text is in a message of this view.
"""

from django import forms
from django.contrib import messages
from django.views.decorators.http import require_POST

from ml.deid.types import TYPES
from webapp.corpus.models import Note
from webapp.deid_ops.missed import MissedError, StaleNote, mark_missed
from webapp.projects.roles import Capability
from webapp.projects.scoping import get_or_404
from webapp.review.actions import Outcome
from webapp.review.views import after_post


class MissedForm(forms.Form):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=0)
    type = forms.ChoiceField(choices=[(kind, kind) for kind in TYPES])
    hash = forms.CharField(max_length=64, required=False)


@require_POST
def missed_identifier(request):
    note = get_or_404(
        request.user, Note.objects.select_related("corpus"), Capability.REVIEW, pk=_int(request.POST.get("note"))
    )
    form = MissedForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        return after_post(request, note, Outcome(f"Nothing was replaced: {problems}", messages.ERROR, 400))
    data = form.cleaned_data
    try:
        result = mark_missed(note, data["start"], data["end"], data["type"], request.user, expected_hash=data["hash"])
    except StaleNote as exc:
        outcome = Outcome(str(exc), messages.WARNING, 409)
    except MissedError as exc:
        outcome = Outcome(f"Nothing was replaced: {exc}", messages.ERROR, 400)
    else:
        outcome = Outcome(said(result))
    note.refresh_from_db()  # the panel shows the new text
    return after_post(request, note, outcome)


def said(result) -> str:
    """What the page says of a replacement: type and counts, never the value."""
    times = f"{result.occurrences} time{'s' if result.occurrences != 1 else ''}"
    where = f"{result.notes} note{'s' if result.notes != 1 else ''}"
    text = f"Missed identifier ({result.type}) replaced {times} in {where}"
    if not result.patient_scope:
        text += " (only this note was searched: the policy names no patient field, or the note has no value there)"
    text += "; relevance maps are being recomputed." if result.jobs else "."
    if result.not_recomputed:
        text += (
            f" {result.not_recomputed} map{'s' if result.not_recomputed != 1 else ''} of a relevance configuration"
            " no job records could not be launched again: launch them from the Jobs page."
        )
    return text


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
