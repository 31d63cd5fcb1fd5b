"""What a reviewer's POST about added spans or accepting the rest does, in words the page shows
(the Outcome of webapp.review.actions): add, edit and remove a span the model missed
(webapp.review.spans), and accept every undecided peak of the note and task shown
(webapp.review.bulk)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from webapp.review import bulk, catalog, rounds, spans
from webapp.review.actions import Outcome, _snippet, guideline_version_of
from webapp.review.decisions import PeakContext
from webapp.review.forms import MAX_ACTIVE_MS, DecisionForm
from webapp.review.noteview import stored_peaks
from webapp.review.selection import Selection


def _active_ms(value) -> int | None:
    try:
        value = int(value)
    except (TypeError, ValueError):
        return None
    return value if 0 <= value <= MAX_ACTIVE_MS else None


class SpanForm(forms.Form):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=0)
    comment = forms.CharField(required=False, max_length=2000)
    guideline = forms.IntegerField(required=False)
    active_ms = forms.CharField(required=False, max_length=20)

    def clean_active_ms(self):
        return _active_ms(self.cleaned_data.get("active_ms"))


def _invalid(form) -> Outcome:
    problems = "; ".join(m for errors in form.errors.values() for m in errors)
    return Outcome(_("Nothing was saved: %(problems)s") % {"problems": problems}, messages.ERROR, 400)


def add(note, task, reviewer, data, round=None) -> Outcome:
    form = SpanForm(data)
    if not form.is_valid():
        return _invalid(form)
    d = form.cleaned_data
    try:
        row, created = spans.add(
            note,
            task,
            reviewer,
            start=d["start"],
            end=d["end"],
            round=round,
            guideline_version=guideline_version_of(task, d.get("guideline"), note.corpus.project_id),
            active_ms=d["active_ms"],
            comment=d["comment"],
        )
    except spans.SpanError as exc:
        return Outcome(_("Nothing was saved: %(reason)s") % {"reason": exc}, messages.ERROR, 400)
    piece = _snippet(note.text, row.start, row.end)
    if not created:
        return Outcome(_("You had already added «%(piece)s».") % {"piece": piece}, messages.INFO)
    return Outcome(_("You added «%(piece)s» as evidence the model missed.") % {"piece": piece})


def edit(row, reviewer, data) -> Outcome:
    form = SpanForm(data)
    if not form.is_valid():
        return _invalid(form)
    d = form.cleaned_data
    try:
        row = spans.edit(
            row, reviewer, start=d["start"], end=d["end"], active_ms=d["active_ms"], comment=data.get("comment")
        )
    except spans.SpanError as exc:
        return Outcome(_("Nothing was saved: %(reason)s") % {"reason": exc}, messages.ERROR, 400)
    piece = _snippet(row.note.text, row.start, row.end)
    return Outcome(_("Your added span is now «%(piece)s».") % {"piece": piece})


def remove(row, reviewer) -> Outcome:
    piece = _snippet(row.note.text, row.start, row.end)
    spans.remove(row, reviewer)
    return Outcome(_("Removed your added span «%(piece)s».") % {"piece": piece}, messages.INFO)


# ---------------------------------------------------------------- accept the rest


class AcceptRestForm(DecisionForm):
    """The selection fields of a decision (which map, which peak setting) and the count the
    confirmation named; no span or decision of its own."""

    start = end = version = decision = adjusted_start = adjusted_end = comment = active_ms = None
    count = forms.IntegerField(min_value=0, required=False)

    def clean(self):
        data = forms.Form.clean(self)
        if self.errors:
            return data
        from ml.peaks import check_params

        try:
            check_params(data["k"], data["sigma"], data["lower"], data["upper"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


def rest_of(note, sel, reviewer) -> int | None:
    """How many peaks of the selection's map of the note the reviewer has not decided (None: no
    map or it does not fit)."""
    found = stored_peaks(note, sel, arrays=False) if sel.task is not None else None
    if found is None or not found[2]:
        return None
    ctx = PeakContext(note, sel.task, sel.model, sel.method, sel.template, sel.config)
    return len(bulk.undecided(ctx, reviewer, found[1]))


def accept_rest(note, data, reviewer) -> tuple[Outcome, int | None]:
    """(what happened, the count to confirm when nothing was done because no confirmation came)."""
    form = AcceptRestForm(data)
    if not form.is_valid():
        return _invalid(form), None
    d = form.cleaned_data
    project_id = note.corpus.project_id
    task, model = catalog.task(d["task"], project_id), catalog.model_version(d["model"], project_id)
    profile = catalog.profile(d["profile"], project_id) if d.get("profile") else None
    if task is None or model is None:
        return Outcome(_("Nothing was saved: unknown task or model version."), messages.ERROR, 400), None
    sel = Selection(task, model, d["method"], d["template"], profile, form.params, config_key=d.get("config") or "")
    found = stored_peaks(note, sel, arrays=False)
    if found is None or not found[2]:
        refusal = _("Nothing was saved: this note has no peaks under the setting shown.")
        return Outcome(refusal, messages.ERROR, 400), None
    ctx = PeakContext(note, task, model, d["method"], d["template"], sel.config)
    if data.get("confirm") != "yes":
        return Outcome(_("Confirm to accept the rest."), messages.INFO), len(bulk.undecided(ctx, reviewer, found[1]))
    try:
        rows = bulk.accept_rest(
            ctx,
            reviewer,
            found[1],
            expected=d.get("count"),
            profile=profile,
            params=form.params.to_dict(),
            guideline_version=guideline_version_of(task, d.get("guideline"), project_id),
        )
    except bulk.StaleCount as exc:
        return Outcome(
            ngettext(  # the English says "peaks" for one too; a translation may agree with the count
                "Nothing was saved: the page was out of date (%(now)s peaks are undecided now, the confirmation "
                "named %(named)s). Look again and confirm.",
                "Nothing was saved: the page was out of date (%(now)s peaks are undecided now, the confirmation "
                "named %(named)s). Look again and confirm.",
                exc.now,
            )
            % {"now": exc.now, "named": d.get("count")},
            messages.WARNING,
            409,
        ), None
    if not rows:
        return Outcome(_("Every peak here is already decided by you: nothing to accept."), messages.INFO), None
    rounds.sync_claims(reviewer, note.pk, task.pk, model.pk, d["method"], d["template"], sel.config)
    n = len(rows)
    said = ngettext(
        "You accepted the %(count)s undecided peak (undo: u).",
        "You accepted the %(count)s undecided peaks (undo: u).",
        n,
    ) % {"count": n}
    return Outcome(said), None
