"""What a reviewer's POST does, in words the page shows: a decision from the decision form, or
an undo. Checks that the span is a peak of the map under the parameters the page showed."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from webapp.corpus.tasks import guideline_versions_for
from webapp.review import caching, catalog, decisions, rounds
from webapp.review.noteview import stored_peaks
from webapp.review.selection import Selection


@dataclass(frozen=True)
class Outcome:
    message: str
    level: int = messages.SUCCESS
    status: int = 200
    current: object | None = None  # the reviewer's current decision, when a stale page was refused
    # A recorded decision: its row, and the selection and peaks it was checked against (what
    # its answer shows the peak's new state with).
    decision: object | None = None
    selection: Selection | None = None
    spans: tuple = ()
    guideline: object | None = None  # the task's current guideline version, as the decision read it


def _snippet(text: str, start: int, end: int) -> str:
    piece = " ".join(text[start:end].split())
    return piece if len(piece) <= 40 else piece[:39] + "…"


def submit(note, form, reviewer) -> Outcome:
    if not form.is_valid():
        problems = "; ".join(m for errors in form.errors.values() for m in errors)
        return Outcome(_("Nothing was saved: %(problems)s") % {"problems": problems}, messages.ERROR, 400)
    data = form.cleaned_data
    project_id = note.corpus.project_id  # another project's task or model is an unknown id
    task, model = catalog.task(data["task"], project_id), catalog.model_version(data["model"], project_id)
    profile = catalog.profile(data["profile"], project_id) if data.get("profile") else None
    if task is None or model is None:
        return Outcome(_("Nothing was saved: unknown task or model version."), messages.ERROR, 400)
    sel = Selection(
        task, model, data["method"], data["template"], profile, form.params, config_key=data.get("config") or ""
    )
    found = stored_peaks(note, sel, arrays=False)
    spans = found[1] if found is not None and found[2] else []
    if (data["start"], data["end"]) not in spans:
        return Outcome(
            _(
                "Nothing was saved: this span is not a peak of the map under the parameters shown "
                "(the page may be out of date; it has been refreshed)."
            ),
            messages.ERROR,
            409,
        )
    ctx = decisions.PeakContext(note, task, model, data["method"], data["template"], sel.config)
    guideline = caching.guideline(task, project_id)  # kept; read once for the check and the answer
    try:
        row = decisions.decide(
            ctx,
            reviewer,
            start=data["start"],
            end=data["end"],
            decision=data["decision"],
            expected_version=data["version"],
            adjusted_start=data["adjusted_start"],
            adjusted_end=data["adjusted_end"],
            comment=data["comment"],
            profile=profile,
            params=form.params.to_dict(),
            guideline_version=guideline_version_of(task, data.get("guideline"), project_id, guideline),
            active_ms=data["active_ms"],
        )
    except decisions.StaleDecision as exc:
        return Outcome(str(exc), messages.WARNING, 409, exc.current)
    except decisions.DecisionError as exc:
        return Outcome(_("Nothing was saved: %(reason)s") % {"reason": exc}, messages.ERROR, 400)
    rounds.sync_claims(reviewer, note.pk, task.pk, model.pk, data["method"], data["template"], sel.config)
    piece = _snippet(note.text, row.start, row.end)
    if row.decision == row.Decision.ADJUST:
        adjusted = _snippet(note.text, row.adjusted_start, row.adjusted_end)
        said = _("You adjusted to «%(adjusted)s» the peak «%(piece)s».") % {"adjusted": adjusted, "piece": piece}
    elif row.decision == row.Decision.REJECT:
        said = _("You rejected the peak «%(piece)s».") % {"piece": piece}
    else:
        said = _("You accepted the peak «%(piece)s».") % {"piece": piece}
    return Outcome(
        said,
        decision=row,
        selection=sel,
        spans=tuple(spans),
        guideline=guideline,
    )


def guideline_version_of(task, shown: int | None, project_id: int, current=False) -> int | None:
    """The guideline version the page showed (0: it showed none), when it is one the project's
    reviewers may read (the task's own or the project's, never another project's); otherwise (no
    page value, or a made-up one) the version they read now; None: no guideline. `current`: the
    task's current guideline version when the caller has read it."""
    if shown == 0:
        return None
    if current is False:
        current = caching.guideline(task, project_id)  # kept: the usual answer (the page showed it) without a query
    if shown is not None and current is not None and current.version == shown:
        return shown
    if shown is not None and guideline_versions_for(task, project_id).filter(version=shown).exists():
        return shown
    return current.version if current is not None else None


def undo(note, reviewer) -> Outcome:
    result = decisions.undo_last(reviewer, note)
    if result is None:
        return Outcome(_("You have no decision on this note to undo."), messages.INFO)
    op, row = result
    rounds.sync_claims(reviewer, note.pk, row.task_id, row.model_version_id, row.method, row.template, row.config_key)
    if op == "undo-accept-rest":  # webapp.review.bulk: the whole accept-the-rest at once
        n = row.batch_count
        said = ngettext(
            "Undone: the %(count)s peak you accepted together are undecided again.",
            "Undone: the %(count)s peaks you accepted together are undecided again.",
            n,
        ) % {"count": n}
        return Outcome(said, messages.INFO)
    piece = _snippet(note.text, row.start, row.end)
    if op == "undo-create":
        return Outcome(_("Undone: your decision on «%(piece)s» is removed.") % {"piece": piece}, messages.INFO)
    # one sentence per decision: a translation agrees the word with its sentence
    back_to = {
        "accept": _("Undone: your decision on «%(piece)s» is back to accepted."),
        "reject": _("Undone: your decision on «%(piece)s» is back to rejected."),
        "adjust": _("Undone: your decision on «%(piece)s» is back to adjusted."),
    }
    return Outcome(back_to[row.decision] % {"piece": piece}, messages.INFO)
