"""Fetch datasets for views through the access layer (webapp.projects.scoping): 404 for what does
not exist or belongs to another project, 403 for what the role may not do."""

from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.projects.roles import Capability
from webapp.projects.scoping import get_or_404


def dataset_for(user, dataset_id: int, capability: Capability = Capability.VIEW) -> DatasetVersion:
    related = ("corpus", "model_version", "profile", "created_by")
    return get_or_404(user, DatasetVersion.objects.select_related(*related), capability, pk=dataset_id)


def export_for(user, dataset_id: int, export_id: int) -> DatasetExport:
    related = ("dataset__corpus", "dataset__model_version", "dataset__profile")
    queryset = DatasetExport.objects.select_related(*related)
    return get_or_404(user, queryset, Capability.EXPORT, pk=export_id, dataset_id=dataset_id)
