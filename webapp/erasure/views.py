"""Erasure pages, for project admins: the list, the form (a dry run first, then a confirmation
naming the corpus or project), and a request's page with its live progress, Cancel and Resume."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.erasure import erasing, planning, retention
from webapp.erasure.forms import ERASE, ErasureForm, RetentionForm
from webapp.erasure.models import ErasureRequest
from webapp.projects.models import Project
from webapp.projects.roles import require
from webapp.projects.scoping import get_or_404


def _erasure_for(user, erasure_id: int) -> ErasureRequest:
    """A request of a project where `user` may erase (404 / 403 as everywhere), or one of a whole
    project that is gone now, to the admin who asked for it (no project says who may see it)."""
    orphan = ErasureRequest.objects.filter(pk=erasure_id, project__isnull=True, requested_by=user).first()
    return orphan or get_or_404(user, ErasureRequest.objects.all(), ERASE, pk=erasure_id)


def erasure_list(request):
    require(request.user, ERASE)
    visible = ErasureRequest.objects.visible_to(request.user, ERASE)
    orphans = ErasureRequest.objects.filter(project__isnull=True, requested_by=request.user)
    erasures = (visible | orphans).distinct()[:100]
    return render(request, "erasure/list.html", {"nav": "erasure", "erasures": erasures})


def erasure_new(request):
    """GET: the form. POST: its dry run (counts per table) with a confirmation; POST with the
    confirmation typed: the request, queued."""
    require(request.user, ERASE)
    form = ErasureForm(request.POST or None, user=request.user)
    context = {"nav": "erasure", "form": form}
    if request.method == "POST" and form.is_valid():
        try:
            counted, _hashes = erasing.plan(form.cleaned_data["project"], form.cleaned_data["scope"], **form.target())
        except planning.PlanError as exc:
            form.add_error(None, str(exc))
            return render(request, "erasure/new.html", context)
        confirmed = request.POST.get("confirm", "").strip() == form.confirmation_word
        if "erase" in request.POST and confirmed:
            erasure = erasing.request(
                form.cleaned_data["project"],
                form.cleaned_data["scope"],
                datasets=form.cleaned_data["datasets"],
                actor=request.user,
                **form.target(),
            )
            messages.success(request, _("Erasure %(id)s is queued; this page follows it.") % {"id": erasure.pk})
            return redirect("erasure:detail", erasure.pk)
        if "erase" in request.POST:
            context["not_confirmed"] = True
        context.update(plan=counted, confirmation_word=form.confirmation_word)
    return render(request, "erasure/new.html", context)


def erasure_detail(request, erasure_id):
    """The page, or (htmx poll) its live part; the poll ends (286) once the erasure has ended."""
    erasure = _erasure_for(request.user, erasure_id)
    context = {"nav": "erasure", "erasure": erasure, "polling": erasure.is_active}
    if request.htmx:
        status = 200 if erasure.is_active else HttpResponseStopPolling.status_code
        return render(request, "erasure/detail.html#live", context, status=status)
    return render(request, "erasure/detail.html", context)


@require_POST
def erasure_cancel(request, erasure_id):
    erasure = _erasure_for(request.user, erasure_id)
    status = erasing.cancel(erasure, request.user)
    if status is None:
        messages.error(request, _("This erasure has ended; there is nothing to cancel."))
    else:
        messages.success(
            request, _("Cancelled.") if status == "cancelled" else _("Cancelling after the batch it is on.")
        )
    return redirect("erasure:detail", erasure.pk)


@require_POST
def erasure_resume(request, erasure_id):
    erasure = _erasure_for(request.user, erasure_id)
    if erasing.resume(erasure):
        messages.success(request, _("Queued again: it goes on where it stopped."))
    else:
        messages.error(request, _("Only a cancelled or failed erasure, or one whose worker was lost, can be resumed."))
    return redirect("erasure:detail", erasure.pk)


def retention_page(request, slug):
    """A project's retention (its admins): the two periods and what a round would remove now."""
    project = get_object_or_404(Project.objects.where(request.user), slug=slug)
    require(request.user, ERASE, project)
    form = RetentionForm(request.POST or None, instance=project)
    if request.method == "POST" and form.is_valid():
        form.save()
        record(request.user, AuditEvent.Action.EDIT_PROJECT, project, **form.cleaned_data)
        messages.success(request, _("Retention saved."))
        return redirect("erasure:retention", project.slug)
    context = {"nav": "erasure", "project": project, "form": form, "due": retention.report(project)}
    return render(request, "erasure/retention.html", context, status=400 if form.errors else 200)
