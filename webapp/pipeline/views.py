from django.shortcuts import render

from webapp.accounts.roles import Capability, capability_required
from webapp.pipeline.models import RelevanceJob


@capability_required(Capability.VIEW)
def job_list(request):
    return render(request, "pipeline/job_list.html", {"nav": "jobs", "jobs": RelevanceJob.objects.all()[:100]})
