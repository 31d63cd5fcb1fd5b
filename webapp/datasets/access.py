"""Fetch datasets for views: 404 for what does not exist, 403 for what the role may not do."""

from django.shortcuts import get_object_or_404

from webapp.accounts.roles import Capability, require
from webapp.datasets.models import DatasetExport, DatasetVersion


def dataset_for(user, dataset_id: int, capability: Capability = Capability.VIEW) -> DatasetVersion:
    require(user, capability)
    related = ("corpus", "model_version", "profile", "created_by")
    return get_object_or_404(DatasetVersion.objects.select_related(*related), pk=dataset_id)


def export_for(user, dataset_id: int, export_id: int) -> DatasetExport:
    require(user, Capability.EXPORT)
    related = ("dataset__corpus", "dataset__model_version", "dataset__profile")
    return get_object_or_404(DatasetExport.objects.select_related(*related), pk=export_id, dataset_id=dataset_id)
