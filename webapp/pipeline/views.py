"""Relevance job pages: list, launch, detail with a live progress fragment, cancel, resume."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.audit.client_ip import client_address
from webapp.lifecycle.estimates import waits_for_confirmation
from webapp.pipeline import estimates, jobs
from webapp.pipeline.access import job_for
from webapp.pipeline.forms import LaunchForm
from webapp.pipeline.launch_initial import launch_initial
from webapp.pipeline.models import RelevanceJob
from webapp.pipeline.progress import job_progress
from webapp.projects.roles import Capability, capability_required, require

JOBS_PER_PAGE = 100


@capability_required(Capability.VIEW)
def job_list(request):
    jobs = RelevanceJob.objects.visible_to(request.user).select_related("corpus", "model_version")
    job_rows = list(jobs[:JOBS_PER_PAGE])
    # the list polls itself (htmx, the #job-list fragment) while any job is active, and stops after
    context = {"nav": "jobs", "jobs": job_rows, "any_active": any(job.is_active for job in job_rows)}
    if not request.htmx:
        return render(request, "pipeline/job_list.html", context)
    fragment = render(request, "pipeline/job_list.html#job-list", context)
    return fragment if context["any_active"] else HttpResponseStopPolling(fragment.content)


def job_detail(request, job_id):
    job = job_for(request.user, job_id)
    context = {"nav": "jobs", "job": job, "progress": job_progress(job)}
    if not request.htmx:
        return render(request, "pipeline/job_detail.html", context)
    fragment = render(request, "pipeline/job_detail.html#progress", context)
    return HttpResponseStopPolling(fragment.content) if context["progress"].ended else fragment


def job_launch(request):
    require(request.user, Capability.LAUNCH)
    # GET: the configuration suggested for the corpus and model (?corpus=&model_version=): the latest evaluation's
    initial = launch_initial(request.GET, LaunchForm)
    # from a note without maps (review pages): that note, and the task it was shown for
    if request.GET.get("external_ids"):
        initial["external_ids"] = request.GET["external_ids"]
    if tasks := [pk for pk in request.GET.getlist("tasks") if pk.isdigit()]:
        initial.update(task_selection=RelevanceJob.TaskSelection.LIST, tasks=tasks)
    form = LaunchForm(request.POST or None, initial=initial, user=request.user)
    launching = request.method == "POST" and form.is_valid()
    context = {"nav": "jobs", "form": form, "estimate": estimates.relevance_job(form.spec()) if launching else None}
    if request.htmx:  # the live estimate as the fields change; never a launch
        return render(request, "pipeline/job_launch.html#estimate", context)
    if launching and waits_for_confirmation(context["estimate"], request.POST):
        context["ask"] = True  # large: the same form again, with the estimate and a confirm button
    elif launching:
        try:
            job = jobs.launch(form.spec(), actor=request.user, ip=client_address(request))
        except jobs.JobError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                _("Job %(id)s launched: a worker is splitting it into chunks; its progress shows below.")
                % {"id": job.pk},
            )
            return redirect("pipeline:job_detail", job.pk)
    return render(request, "pipeline/job_launch.html", context)


@require_POST
def job_cancel(request, job_id):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    try:
        jobs.cancel(job, actor=request.user)
    except jobs.JobError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Cancelling: chunks already running finish, the others are skipped."))
    return redirect("pipeline:job_detail", job.pk)


@require_POST
def job_resume(request, job_id):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    try:
        count = jobs.resume(job, actor=request.user)
    except jobs.JobError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            ngettext(
                "Resumed: %(count)s chunks queued again; maps already stored are kept.",
                "Resumed: %(count)s chunks queued again; maps already stored are kept.",
                count,
            )
            % {"count": count},
        )
    return redirect("pipeline:job_detail", job.pk)
