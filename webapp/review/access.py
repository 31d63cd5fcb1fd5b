"""Fetch objects for the review views: 403 for what the role may not do, 404 for what does not exist.

Reading review pages needs VIEW (every role). Deciding on peaks and judging validation items
needs REVIEW (clinicians, admins). Tuning decisions that change what datasets are built from
(saving a peak profile, drawing a validation set, adopting its recommendation, redrawing the
preview sample) need REVIEW or LAUNCH: they are clinical judgement as much as a research setting.
Retiring a validation set (its notes go back to dataset builds) is a research decision: LAUNCH
(researchers, admins), or the clinician who drew the set.
"""

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from webapp.accounts.roles import Capability, has_capability, require
from webapp.corpus.models import Corpus, Note
from webapp.review.models import ValidationSet

TUNE = (Capability.REVIEW, Capability.LAUNCH)


def require_any(user, capabilities) -> None:
    if not any(has_capability(user, c) for c in capabilities):
        names = " or ".join(c.value for c in capabilities)
        raise PermissionDenied(f"Your role does not allow: {names}")


def corpus_for(user, corpus_id: int, capability: Capability = Capability.VIEW) -> Corpus:
    require(user, capability)
    return get_object_or_404(Corpus, pk=corpus_id)


def note_for(user, corpus_id: int, note_id: int, capability: Capability = Capability.VIEW) -> Note:
    require(user, capability)
    return get_object_or_404(Note.objects.select_related("corpus"), pk=note_id, corpus_id=corpus_id)


def tuning_corpus_for(user, corpus_id: int) -> Corpus:
    require_any(user, TUNE)
    return get_object_or_404(Corpus, pk=corpus_id)


def validation_set_for(user, set_id: int, capability: Capability = Capability.VIEW) -> ValidationSet:
    require(user, capability)
    return get_object_or_404(ValidationSet.objects.select_related("corpus", "model_version", "retired_by"), pk=set_id)


def tuning_set_for(user, set_id: int) -> ValidationSet:
    require_any(user, TUNE)
    return get_object_or_404(ValidationSet.objects.select_related("corpus", "model_version"), pk=set_id)


def may_retire(user, vset: ValidationSet) -> bool:
    """Researchers and admins, or the user who drew the set (if their role may still draw sets)."""
    if has_capability(user, Capability.LAUNCH):
        return True
    return (
        vset.created_by_id is not None and vset.created_by_id == user.pk and any(has_capability(user, c) for c in TUNE)
    )


def retirable_set_for(user, set_id: int) -> ValidationSet:
    vset = validation_set_for(user, set_id)
    if not may_retire(user, vset):
        raise PermissionDenied("Only researchers, admins or the person who drew it may retire a validation set.")
    return vset


# -- review rounds (fetched like the rest: the role's capability, then the object or 404)
from django.shortcuts import get_object_or_404 as _object_or_404  # noqa: E402

from webapp.accounts.roles import require as _require  # noqa: E402
from webapp.review.models import ReviewRound  # noqa: E402


def round_for(user, round_id: int, capability: Capability = Capability.VIEW) -> ReviewRound:
    """A review round: VIEW to see its progress, REVIEW to work in its queue, LAUNCH to change its
    reviewers, ADJUDICATE to settle its disputed peaks, EXPORT to download the team's work."""
    _require(user, capability)
    return _object_or_404(ReviewRound.objects.select_related("corpus", "model_version", "profile"), pk=round_id)


def round_corpus_for(user, corpus_id: int) -> Corpus:
    """The corpus a researcher (LAUNCH) creates a round over."""
    _require(user, Capability.LAUNCH)
    return _object_or_404(Corpus, pk=corpus_id)
