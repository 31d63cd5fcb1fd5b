"""The API's annotation export (mounted under /api/ by webapp.api.api): a corpus's gold spans, a
model's peaks and review decisions as a zip in an annotation tool's format, as the corpus page
exports them (webapp.interchange.exporting), through the gate (webapp.deid.gate)."""

from ninja import Router
from ninja.errors import HttpError

from webapp.corpus.access import corpus_for
from webapp.db.api import Error, download, zip_download
from webapp.interchange.exporting import ExportChoice, ExportChoiceError, download_name, peak_source, zip_export
from webapp.lib.formats import writers
from webapp.lifecycle.schemas import Conflict
from webapp.pipeline.models import ModelVersion
from webapp.projects.roles import Capability
from webapp.projects.scoping import get_or_404

router = Router(tags=["annotations"])


@router.get(
    "/corpora/{corpus_id}/annotations/{fmt}",
    response={400: Error, 403: Error, 404: Error, 409: Conflict},
    openapi_extra=download("application/zip", "The annotation tool's files, zipped."),
    summary="Gold spans, a model's peaks (pre-annotations) and review decisions as a zip in an annotation format",
)
def export_annotations(
    request,
    corpus_id: int,
    fmt: str,
    gold: bool = True,
    decisions: bool = True,
    peaks_model: str = "",
    profile: str = "",
    confirm_identifiable: bool = False,
):
    """The corpus page's annotation export (webapp.interchange), by API: `fmt` one of the
    interchange formats; `peaks_model`: a model version's name to include its peaks;
    `confirm_identifiable`: a project admin lets a corpus that is not de-identified leave."""
    corpus = corpus_for(request.user, corpus_id, Capability.EXPORT)
    written = [f.name for f in writers()]
    if fmt not in written:
        raise HttpError(400, f"fmt must be one of {', '.join(written)}.")
    peaks = None
    if peaks_model:
        get_or_404(request.user, ModelVersion.objects, name=peaks_model)  # a model this token may see
        try:
            peaks = peak_source(corpus, peaks_model, profile_name=profile)
        except ExportChoiceError as exc:
            raise HttpError(400, str(exc)) from None
    choice = ExportChoice(gold=gold, peaks=peaks, decisions=decisions)
    stream = zip_export(corpus, fmt, choice, actor=request.user, confirm_identifiable=confirm_identifiable)
    return zip_download(stream, download_name(corpus, fmt))
