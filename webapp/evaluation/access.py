"""Fetch evaluations for views: 403 for what the role may not do, 404 for what does not exist."""

from django.shortcuts import get_object_or_404

from webapp.accounts.roles import Capability, require
from webapp.evaluation.models import RelevanceEvaluation


def evaluation_for(user, evaluation_id: int, capability: Capability = Capability.VIEW) -> RelevanceEvaluation:
    require(user, capability)
    queryset = RelevanceEvaluation.objects.select_related("corpus", "model_version", "profile", "created_by")
    return get_object_or_404(queryset, pk=evaluation_id)
