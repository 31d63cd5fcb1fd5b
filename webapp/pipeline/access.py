"""Fetch relevance jobs for views through the access layer (webapp.projects.scoping): 404 for what
does not exist or belongs to another project, 403 for what the role may not do."""

from webapp.pipeline.models import MapImportJob, RelevanceJob
from webapp.projects.roles import Capability
from webapp.projects.scoping import get_or_404


def job_for(user, job_id: int, capability: Capability = Capability.VIEW) -> RelevanceJob:
    queryset = RelevanceJob.objects.select_related("corpus", "model_version", "created_by")
    return get_or_404(user, queryset, capability, pk=job_id)


def map_import_job_for(user, job_id: int, capability: Capability = Capability.VIEW) -> MapImportJob:
    queryset = MapImportJob.objects.select_related("corpus", "model_version", "created_by", "map_import")
    return get_or_404(user, queryset, capability, pk=job_id)
