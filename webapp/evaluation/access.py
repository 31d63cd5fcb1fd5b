"""Fetch evaluations for views through the access layer (webapp.projects.scoping): 404 for what
does not exist or belongs to another project, 403 for what the role may not do."""

from webapp.evaluation.models import RelevanceEvaluation
from webapp.projects.roles import Capability
from webapp.projects.scoping import get_or_404


def evaluation_for(user, evaluation_id: int, capability: Capability = Capability.VIEW) -> RelevanceEvaluation:
    queryset = RelevanceEvaluation.objects.select_related("corpus", "model_version", "profile", "created_by")
    return get_or_404(user, queryset, capability, pk=evaluation_id)
