"""De-identification pages: a project's policy (its admins), launching a corpus's
de-identification into a new corpus (whoever may launch work), and a job's page with its live
progress, Cancel and Resume (webapp.deid_ops.jobs)."""

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.access import corpus_for
from webapp.deid import mapping
from webapp.deid.access import job_for, project_for_policy
from webapp.deid.policy import policy_of
from webapp.deid_ops import jobs
from webapp.deid_ops.forms import PolicyForm
from webapp.projects.roles import Capability


def policy_page(request, slug):
    """GET: the project's policy as a form. POST: saved and audited (field names and counts, never
    the lists' words), or the form again with each problem beside its field."""
    project = project_for_policy(request.user, slug)
    form = PolicyForm(request.POST or None, instance=policy_of(project))
    if request.method == "POST" and form.is_valid():
        if form.has_changed():
            policy = form.save(commit=False)
            policy.updated_by = request.user
            policy.save()
            record(request.user, AuditEvent.Action.DEID_POLICY, project, **form.changes())
            messages.success(request, _("De-identification policy of %(project)s saved.") % {"project": project.name})
        else:
            messages.info(request, _("Nothing changed."))
        return redirect("deid:policy", project.slug)
    context = {
        "nav": "projects",
        "project": project,
        "form": form,
        "mapping_key_set": mapping.key_set(),
        "secret_set": bool(settings.DEID_SECRET),
    }
    return render(request, "deid/policy.html", context, status=400 if form.errors else 200)


@require_POST
def corpus_deidentify(request, corpus_id):
    """Launch the de-identification of a corpus into a new corpus; its page follows it."""
    corpus = corpus_for(request.user, corpus_id, Capability.LAUNCH)
    try:
        job = jobs.launch_deidentify(corpus, actor=request.user)
    except jobs.LaunchRefused as exc:
        messages.error(request, str(exc))
        return redirect("corpus:detail", corpus.pk)
    messages.success(request, _("Corpus %(corpus)s is being made; this page follows it.") % {"corpus": job.target_name})
    return redirect("deid:job", job.pk)


def job_detail(request, job_id):
    """The page, or (htmx poll) its live part; the poll ends (286) once the job has ended."""
    job = job_for(request.user, job_id)
    context = {"nav": "corpora", "job": job, "polling": job.is_active}
    if request.htmx:
        status = 200 if job.is_active else HttpResponseStopPolling.status_code
        return render(request, "deid/job_detail.html#live", context, status=status)
    return render(request, "deid/job_detail.html", context)


@require_POST
def job_cancel(request, job_id):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    status = jobs.cancel(job, request.user)
    if status is None:
        messages.error(request, _("This job has ended; there is nothing to cancel."))
    else:
        messages.success(
            request, _("Cancelled.") if status == "cancelled" else _("Cancelling after the batch it is on.")
        )
    return redirect("deid:job", job.pk)


@require_POST
def job_resume(request, job_id):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    if jobs.resume(job, request.user):
        messages.success(request, _("Queued again: it goes on where it stopped."))
    else:
        messages.error(request, _("Only a cancelled or failed job, or one whose worker was lost, can be resumed."))
    return redirect("deid:job", job.pk)
