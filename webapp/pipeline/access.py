"""Fetch relevance jobs for views: 403 for what the role may not do, 404 for what does not exist."""

from django.shortcuts import get_object_or_404

from webapp.accounts.roles import Capability, require
from webapp.pipeline.models import RelevanceJob


def job_for(user, job_id: int, capability: Capability = Capability.VIEW) -> RelevanceJob:
    require(user, capability)
    return get_object_or_404(RelevanceJob.objects.select_related("corpus", "model_version", "created_by"), pk=job_id)
