from django.shortcuts import render

from webapp.accounts.roles import Capability, capability_required
from webapp.datasets.models import DatasetVersion


@capability_required(Capability.VIEW)
def dataset_list(request):
    return render(request, "datasets/dataset_list.html", {"nav": "datasets", "datasets": DatasetVersion.objects.all()[:100]})
