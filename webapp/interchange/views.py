"""The corpus's export page: a form, one button per format of the table; the download is a zip
streamed while it is sent (webapp.interchange.exporting), through the gate (webapp.deid.gate: the
refusal on the page, the project admin's checkbox), with the corpus's latest exports and their
residual scans. "Import now" after a preview of annotation-tool files
(webapp.corpus.import_jobs.import_previewed)."""

from django.contrib import messages
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from webapp.audit.client_ip import client_address
from webapp.corpus import import_jobs
from webapp.corpus.access import corpus_for, import_job_for
from webapp.deid import gate
from webapp.interchange.exporting import ExportChoice, download_name, peak_source, recent_exports, zip_export
from webapp.interchange.forms import ExportForm
from webapp.lib.formats import writers
from webapp.projects.roles import Capability


def export(request, corpus_id):
    corpus = corpus_for(request.user, corpus_id, Capability.EXPORT)
    query = request.GET if "format" in request.GET else None
    form = ExportForm(query, initial={"gold": True}, project_id=corpus.project_id)
    context = {
        "nav": "corpora",
        "corpus": corpus,
        "form": form,
        "formats": writers(),
        "gate": gate.gate_for([corpus], request.user),
    }
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        model, profile = data["peaks"], data["profile"]
        peaks = peak_source(corpus, model.name, profile_name=profile.name if profile else "") if model else None
        choice = ExportChoice(gold=data["gold"], peaks=peaks, decisions=data["decisions"])
        try:
            stream = zip_export(
                corpus, data["format"], choice, actor=request.user, confirm_identifiable=gate.confirmed(request.GET)
            )
        except gate.Refused as exc:
            context["gate_refused"] = exc.reason
        else:
            response = StreamingHttpResponse(stream)
            response["Content-Type"] = "application/zip"
            response["Content-Disposition"] = f'attachment; filename="{download_name(corpus, data["format"])}"'
            return response
    context["exports"] = recent_exports(corpus)
    return render(request, "interchange/export.html", context)


@require_POST
def import_previewed(request, job_id):
    """The Import page's "Import now" after a preview of annotation-tool files."""
    job = import_job_for(request.user, job_id)
    try:
        new = import_jobs.import_previewed(job, actor=request.user, ip=client_address(request))
    except import_jobs.NotPreviewed as exc:
        messages.error(request, str(exc))
        return redirect("corpus:import_detail", job.pk)
    messages.info(
        request,
        _("%(file)s is queued for import into %(corpus)s, as previewed.")
        % {"file": new.file_name, "corpus": new.corpus_name},
    )
    return redirect("corpus:import_detail", new.pk)
