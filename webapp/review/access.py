"""Fetch objects for the review views through the access layer (webapp.projects.scoping): 404 for
what does not exist or belongs to another project, 403 for what the role there may not do.

Reading review pages needs VIEW (every role). Deciding on peaks and judging validation items
needs REVIEW (clinicians, admins). Tuning decisions that change what datasets are built from
(saving a peak profile, drawing a validation set, adopting its recommendation, redrawing the
preview sample) need REVIEW or LAUNCH: they are clinical judgement as much as a research setting.
Retiring a validation set (its notes go back to dataset builds) is a research decision: LAUNCH
(researchers, admins), or the clinician who drew the set.
"""

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404

from webapp.corpus.models import Corpus, Note
from webapp.db.prepared import Prepared
from webapp.projects.roles import Capability, has_capability
from webapp.projects.scoping import check_or_404, get_or_404, member_or_404
from webapp.review import catalog
from webapp.review.models import AddedSpan, ReviewRound, RoundReviewer, ValidationSet

TUNE = (Capability.REVIEW, Capability.LAUNCH)


def require_any(user, capabilities, project=None) -> None:
    if not any(has_capability(user, c, project) for c in capabilities):
        names = " or ".join(c.value for c in capabilities)
        raise PermissionDenied(f"Your role does not allow: {names}")


# The review loop's fetches (every queue, note and decision answer): the query built once per
# process (webapp.db.prepared), the access decided on the row by scoping.check_or_404, which
# decides what get_or_404's filter does.
_CORPUS = Prepared(lambda _shape, corpus_id: Corpus.objects.filter(pk=corpus_id))
_NOTE = Prepared(
    lambda _shape, note_id, corpus_id: Note.objects.select_related("corpus").filter(pk=note_id, corpus_id=corpus_id)
)


def _one(found):
    return found[0] if found else None


def corpus_for(user, corpus_id: int, capability: Capability = Capability.VIEW) -> Corpus:
    return check_or_404(user, _one(_CORPUS.objects(None, corpus_id=int(corpus_id))), capability)


def note_for(user, corpus_id: int, note_id: int, capability: Capability = Capability.VIEW) -> Note:
    note = _one(_NOTE.objects(None, note_id=int(note_id), corpus_id=int(corpus_id)))
    return check_or_404(user, note, capability)


def tuning_corpus_for(user, corpus_id: int) -> Corpus:
    corpus = get_or_404(user, Corpus.objects.all(), pk=corpus_id)
    require_any(user, TUNE, corpus.project_id)
    return corpus


def validation_set_for(user, set_id: int, capability: Capability = Capability.VIEW) -> ValidationSet:
    queryset = ValidationSet.objects.select_related("corpus", "model_version", "retired_by")
    return get_or_404(user, queryset, capability, pk=set_id)


def tuning_set_for(user, set_id: int) -> ValidationSet:
    vset = get_or_404(user, ValidationSet.objects.select_related("corpus", "model_version"), pk=set_id)
    require_any(user, TUNE, vset.corpus.project_id)
    return vset


def may_retire(user, vset: ValidationSet) -> bool:
    """Researchers and admins, or the user who drew the set (if their role may still draw sets)."""
    project = vset.corpus.project_id
    if has_capability(user, Capability.LAUNCH, project):
        return True
    drew_it = vset.created_by_id is not None and vset.created_by_id == user.pk
    return drew_it and any(has_capability(user, c, project) for c in TUNE)


def retirable_set_for(user, set_id: int) -> ValidationSet:
    vset = validation_set_for(user, set_id)
    if not may_retire(user, vset):
        raise PermissionDenied("Only researchers, admins or the person who drew it may retire a validation set.")
    return vset


# -- review rounds


def round_for(user, round_id: int, capability: Capability = Capability.VIEW) -> ReviewRound:
    """A review round: VIEW to see its progress, REVIEW to work in its queue, LAUNCH to change its
    reviewers, ADJUDICATE to settle its disputed peaks, EXPORT to download the team's work."""
    queryset = ReviewRound.objects.select_related("corpus", "model_version", "profile")
    return get_or_404(user, queryset, capability, pk=round_id)


def round_corpus_for(user, corpus_id: int) -> Corpus:
    """The corpus a researcher (LAUNCH) creates a round over."""
    return get_or_404(user, Corpus.objects.all(), Capability.LAUNCH, pk=corpus_id)


def round_reviewer_for(rnd: ReviewRound, user_id):
    """The person a round's reviewer form names: a member of the round's project, or one of the
    round's reviewers (to take off someone who has left the project); any other id is a 404."""
    reviewers = RoundReviewer.objects.filter(round=rnd).values("reviewer")
    return member_or_404(rnd.corpus.project_id, user_id, also=get_user_model().objects.filter(pk__in=reviewers))


# -- spans the model missed (webapp.review.spans)


def added_span_for(user, corpus_id: int, note_id: int, span_id: int):
    """The user's own added span on the note: another project's note is a 404 (note_for), and so
    is a span id of another note or another reviewer (REVIEW: only clinicians and admins change
    spans)."""
    note = note_for(user, corpus_id, note_id, Capability.REVIEW)
    span = AddedSpan.objects.filter(pk=span_id, note=note, reviewer=user).select_related("task").first()
    if span is None:
        raise Http404("No such span of yours on this note.")
    span.note = note
    return span


def task_for(note, task_id):
    """The task a form names, when it is the note's project's (or the catalog's); else a 404."""
    try:
        pk = int(task_id)
    except (TypeError, ValueError):
        raise Http404("No such task.") from None
    task = catalog.task(pk, note.corpus.project_id)
    if task is None:
        raise Http404("No such task.")
    return task


def round_of_form(user, value, capability: Capability = Capability.REVIEW):
    """The review round a form names (`round`), through round_for (another project's: 404); None
    when the form names none."""
    try:
        round_id = int(value)
    except (TypeError, ValueError):
        return None
    return round_for(user, round_id, capability)
