"""The API's relevance maps of a note (mounted under /api/ by webapp.api.api): each map with its
peaks as character spans under a peak profile, as the review page shows them (webapp.review.peakstore)."""

from django.db.models import F
from ninja import Router, Schema
from ninja.errors import HttpError
from pydantic import Field

from ml.peaks import PAPER
from webapp.corpus.access import note_for
from webapp.db.api import Error
from webapp.pipeline.models import PeakProfile, RelevanceMap
from webapp.review import peakstore

router = Router(tags=["relevance maps"])


class MapOut(Schema):
    id: int
    task: str = Field(description="The task's slug.")
    model_version: int
    method: str
    template: str
    config_key: str
    job: int | None = Field(description="The relevance job that wrote it.")
    n_tokens: int
    peaks: list[list[int]] = Field(description="The peaks' character spans [[start, end], ...].")
    fits: bool | None = Field(description="Whether the map's tokens fit the note's text.")
    offsets: list[list[int]] | None = Field(None, description="arrays=true: each token's character span.")
    scores: list[float] | None = Field(None, description="arrays=true: each token's relevance.")


class NoteMapsOut(Schema):
    note: int
    profile: str = Field(description='The peak profile\'s name ("paper": its parameters).')
    maps: list[MapOut]


@router.get(
    "/corpora/{corpus_id}/notes/{note_id}/maps",
    response={200: NoteMapsOut, 400: Error, 404: Error},
    exclude_unset=True,  # offsets and scores only when asked for
    summary="A note's relevance maps and their peaks",
)
def note_maps(request, corpus_id: int, note_id: int, profile: str = "", arrays: bool = False):
    """Each map of the note (task, model, configuration) with its peaks as character spans under
    the named peak profile (default: the default profile, as on the review page); `arrays=true`
    adds the tokens' character offsets and scores."""
    note = note_for(request.user, corpus_id, note_id)
    project_id = note.corpus.project_id  # its own profiles and the shared ones; another project's is unknown
    named = PeakProfile.objects.of_project(project_id).filter(name=profile)
    named = named.order_by(F("project").asc(nulls_last=True), "-version")  # its own before a shared one
    chosen = named.first() if profile else PeakProfile.objects.default_of(project_id)
    if profile and chosen is None:
        raise HttpError(400, f"No peak profile named {profile!r}.")
    params = chosen.params if chosen else PAPER
    maps = RelevanceMap.objects.visible_to(request.user).filter(note=note).select_related("task", "config", "tokens")
    answer = []
    for relevance_map in maps.order_by("pk"):
        one = RelevanceMap.objects.filter(pk=relevance_map.pk)
        spans, fits = peakstore.spans_of(one, params, note, store=False)
        item = {
            "id": relevance_map.pk,
            "task": relevance_map.task.slug,
            "model_version": relevance_map.model_version_id,
            "method": relevance_map.method,
            "template": relevance_map.template,
            "config_key": relevance_map.config_key,
            "job": relevance_map.job_id,
            "n_tokens": relevance_map.n_tokens,
            "peaks": [list(span) for span in spans],
            "fits": fits,
        }
        if arrays:
            offsets, scores = relevance_map.arrays()
            item["offsets"], item["scores"] = offsets.tolist(), [float(x) for x in scores]
        answer.append(item)
    return {"note": note.pk, "profile": chosen.name if chosen else "paper", "maps": answer}
