"""Pages of relevance maps computed elsewhere: the upload form, the imports, one import's page
with its live progress (htmx fragment), its refused lines or its maps, Cancel and Resume. The
work is webapp.pipeline.mapimport_jobs'; access goes through webapp.pipeline.access."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.audit.client_ip import client_address
from webapp.lifecycle import actions
from webapp.pipeline import map_problem_text
from webapp.pipeline.access import map_import_job_for
from webapp.pipeline.forms import MapImportForm
from webapp.pipeline.models import MapImportJob, RelevanceMap
from webapp.projects.roles import Capability, capability_required, require

LISTED = 100  # imports on the list page
MAPS_LISTED = 50  # maps on an import's page


def map_import_new(request):
    require(request.user, Capability.IMPORT)
    initial = {name: request.GET[name] for name in ("corpus", "model_version") if request.GET.get(name, "").isdigit()}
    form = MapImportForm(request.POST or None, request.FILES or None, initial=initial, user=request.user)
    if request.method == "POST" and form.is_valid():
        job = form.launch(request.user, ip=client_address(request))
        messages.success(request, _("The file is stored; a worker checks every line, then imports the maps."))
        return redirect("pipeline:map_import_detail", job.pk)
    recent = MapImportJob.objects.visible_to(request.user).select_related("corpus", "model_version")[:10]
    return render(request, "pipeline/map_import_new.html", {"nav": "jobs", "form": form, "recent": recent})


@capability_required(Capability.VIEW)
def map_import_list(request):
    jobs = MapImportJob.objects.visible_to(request.user).select_related("corpus", "model_version", "map_import")
    return render(request, "pipeline/map_import_list.html", {"nav": "jobs", "jobs": list(jobs[:LISTED])})


def map_import_detail(request, map_import_id):
    job = map_import_job_for(request.user, map_import_id)
    context = {
        "nav": "jobs",
        "job": job,
        "maps": _maps(job) if job.is_done else [],
        # stored in English by the worker, shown in the reader's language
        "problems": [(line, map_problem_text.shown(reason)) for line, reason in job.problems],
        "error": map_problem_text.shown(job.error),
    }
    if not request.htmx:
        return render(request, "pipeline/map_import_detail.html", context)
    fragment = render(request, "pipeline/map_import_detail.html#progress", context)
    return HttpResponseStopPolling(fragment.content) if job.is_ended else fragment


def _maps(job: MapImportJob) -> list[dict]:
    """The first maps stored under the import's configuration for its model version and corpus."""
    made = job.map_import
    if made is None:
        return []
    rows = (
        RelevanceMap.objects.for_config(made.config["method"], made.config["template"], made.config_key)
        .filter(model_version_id=made.model_version_id, note__corpus_id=made.corpus_id)
        .order_by("note__external_id", "task__slug")
        .values("note_id", "note__external_id", "task__slug")
    )
    return list(rows[:MAPS_LISTED])


@require_POST
def map_import_cancel(request, map_import_id):
    job = map_import_job_for(request.user, map_import_id, Capability.IMPORT)
    try:
        actions.cancel("map import", job, request.user)
    except actions.Refused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Cancelling: the worker stops before anything is written."))
    return redirect("pipeline:map_import_detail", job.pk)


@require_POST
def map_import_resume(request, map_import_id):
    job = map_import_job_for(request.user, map_import_id, Capability.IMPORT)
    try:
        actions.resume("map import", job, request.user)
    except actions.Refused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Resumed: a worker reads the stored file again."))
    return redirect("pipeline:map_import_detail", job.pk)
