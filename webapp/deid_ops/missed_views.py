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
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from ml.deid.types import TYPES
from webapp.corpus.models import Note
from webapp.deid import identifier_types
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
        return after_post(
            request, note, Outcome(_("Nothing was replaced: %(why)s") % {"why": problems}, messages.ERROR, 400)
        )
    data = form.cleaned_data
    try:
        result = mark_missed(note, data["start"], data["end"], data["type"], request.user, expected_hash=data["hash"])
    except StaleNote as exc:
        outcome = Outcome(str(exc), messages.WARNING, 409)
    except MissedError as exc:
        outcome = Outcome(_("Nothing was replaced: %(why)s") % {"why": exc}, messages.ERROR, 400)
    else:
        outcome = Outcome(said(result))
    note.refresh_from_db()  # the panel shows the new text
    return after_post(request, note, outcome)


def said(result) -> str:
    """What the page says of a replacement: its type by its label, the counts, never the value."""
    times = ngettext("%(count)s time", "%(count)s times", result.occurrences) % {"count": result.occurrences}
    where = ngettext("%(count)s note", "%(count)s notes", result.notes) % {"count": result.notes}
    text = _("Missed identifier (%(type)s) replaced %(times)s in %(where)s") % {
        "type": identifier_types.label(result.type),
        "times": times,
        "where": where,
    }
    if not result.patient_scope:
        text += " " + _(
            "(only this note was searched: the policy names no patient field, or the note has no value there)"
        )
    text += "; " + _("relevance maps are being recomputed.") if result.jobs else "."
    if result.not_recomputed:
        text += " " + ngettext(
            "%(count)s map of a relevance configuration no job records could not be launched again: "
            "launch them from the Jobs page.",
            "%(count)s maps of a relevance configuration no job records could not be launched again: "
            "launch them from the Jobs page.",
            result.not_recomputed,
        ) % {"count": result.not_recomputed}
    return text


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
