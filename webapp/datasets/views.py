"""Dataset pages: list, build form, detail with its live status and statistics, exports, and
the actions on a build or an export: build again, cancel. Builds, downloads and exports pass the
gate (webapp.deid.gate): its refusal is said on the page, with the project admin's checkbox."""

from django.contrib import messages
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.datasets import estimates, export
from webapp.datasets.access import dataset_for, export_for
from webapp.datasets.forms import BuildForm
from webapp.datasets.launch import LaunchError, build_again, cancel_build, cancel_export, launch_build, request_export
from webapp.datasets.models import DatasetVersion
from webapp.datasets.stats import present
from webapp.deid import gate
from webapp.lifecycle.estimates import waits_for_confirmation
from webapp.projects.roles import Capability, capability_required, require

LIST_SIZE = 200


@capability_required(Capability.VIEW)
def dataset_list(request):
    datasets = DatasetVersion.objects.visible_to(request.user).select_related("corpus").defer("stats")[:LIST_SIZE]
    return render(request, "datasets/dataset_list.html", {"nav": "datasets", "datasets": datasets})


def dataset_new(request):
    require(request.user, Capability.LAUNCH)
    form = BuildForm(request.POST or None, user=request.user)
    launching = request.method == "POST" and form.is_valid()
    estimate = estimates.dataset_build(form.cleaned_data["model_version"], form.maps.count()) if launching else None
    context = {"nav": "datasets", "form": form, "estimate": estimate}
    if request.htmx:  # the live estimate as the fields change; never a launch
        return render(request, "datasets/dataset_form.html#estimate", context)
    if launching:
        context["gate"] = gate.gate_for([form.cleaned_data["corpus"]], request.user)
    if launching and waits_for_confirmation(estimate, request.POST):
        context["ask"] = True  # large: the same form again, with the estimate and a confirm button
    elif launching:
        try:
            dataset = launch_build(
                actor=request.user, confirm_identifiable=gate.confirmed(request.POST), **form.build_fields()
            )
        except gate.Refused as exc:
            context["gate_refused"] = exc.reason
        except LaunchError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("%(dataset)s is queued; this page follows the build.") % {"dataset": dataset})
            return redirect("datasets:detail", dataset.pk)
    return render(request, "datasets/dataset_form.html", context)


def dataset_detail(request, dataset_id):
    """The page, or (htmx poll) its live part; the poll ends (286) once nothing is running."""
    dataset = dataset_for(request.user, dataset_id)
    exports = list(dataset.exports.select_related("created_by")[:20])
    polling = dataset.is_active or any(e.is_active for e in exports)
    context = {
        "nav": "datasets",
        "dataset": dataset,
        "exports": exports,
        "export_formats": export.FORMATS.values(),
        "polling": polling,
        "stats": present(dataset.stats) if dataset.is_done else {},
        "gate": gate.gate_for([dataset.corpus], request.user),
    }
    if request.htmx:
        status = 200 if polling else HttpResponseStopPolling.status_code
        return render(request, "datasets/dataset_detail.html#live", context, status=status)
    return render(request, "datasets/dataset_detail.html", context)


@require_POST
def dataset_build_again(request, dataset_id):
    dataset = dataset_for(request.user, dataset_id, Capability.LAUNCH)
    try:
        queued = build_again(dataset, request.user, confirm_identifiable=gate.confirmed(request.POST))
    except gate.Refused as exc:
        messages.error(request, exc.reason)
        return redirect("datasets:detail", dataset.pk)
    except LaunchError as exc:
        messages.error(request, str(exc))
        return redirect("datasets:detail", dataset.pk)
    messages.success(request, _("%(dataset)s is queued.") % {"dataset": queued})
    return redirect("datasets:detail", queued.pk)


@require_POST
def dataset_cancel(request, dataset_id):
    dataset = dataset_for(request.user, dataset_id, Capability.LAUNCH)
    try:
        status = cancel_build(dataset, request.user)
    except LaunchError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            _("The build is cancelled.")
            if status == "cancelled"
            else _("Cancelling: the build stops after the maps it is reading now; no examples are kept."),
        )
    return redirect("datasets:detail", dataset.pk)


def dataset_download(request, dataset_id, fmt):
    dataset = dataset_for(request.user, dataset_id, Capability.EXPORT)
    if fmt not in export.DATA_FILES:
        return HttpResponseBadRequest(
            f"Download one of {', '.join(export.DATA_FILES)} here; the other formats are folders prepared first."
        )
    try:
        stream = export.stream_download(dataset, fmt, request.user, confirm_identifiable=gate.confirmed(request.GET))
    except gate.Refused as exc:
        messages.error(request, exc.reason)
        return redirect("datasets:detail", dataset.pk)
    except export.ExportError as exc:
        messages.error(request, str(exc))
        return redirect("datasets:detail", dataset.pk)
    return _zip_response(stream, export.download_name(dataset, fmt))


@require_POST
def dataset_export(request, dataset_id):
    dataset = dataset_for(request.user, dataset_id, Capability.EXPORT)
    fmt = request.POST.get("format", "hf")
    if fmt not in export.FORMATS:
        return HttpResponseBadRequest(f"Unknown export format; choose one of {', '.join(export.FORMATS)}.")
    try:
        request_export(dataset, fmt, request.user, confirm_identifiable=gate.confirmed(request.POST))
    except gate.Refused as exc:
        messages.error(request, exc.reason)
    except LaunchError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("The export is being prepared; it appears below when it is ready."))
    return redirect("datasets:detail", dataset.pk)


@require_POST
def export_cancel(request, dataset_id, export_id):
    job = export_for(request.user, dataset_id, export_id)
    try:
        status = cancel_export(job, request.user)
    except LaunchError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            _("The export is cancelled.")
            if status == "cancelled"
            else _("Cancelling: the export stops after the rows it is writing now."),
        )
    return redirect("datasets:detail", dataset_id)


def export_download(request, dataset_id, export_id):
    job = export_for(request.user, dataset_id, export_id)
    try:
        stream = export.stream_folder(job, request.user, confirm_identifiable=gate.confirmed(request.GET))
    except gate.Refused as exc:
        messages.error(request, exc.reason)
        return redirect("datasets:detail", dataset_id)
    except export.ExportError as exc:
        messages.error(request, str(exc))
        return redirect("datasets:detail", dataset_id)
    return _zip_response(stream, export.download_name(job.dataset, job.format))


def _zip_response(stream, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response
