"""What waits for a reviewer: per corpus with relevance maps, how many notes have maps and how
many of them the reviewer has not decided anything on yet. The clinician's home page leads with it.

Counts use the corpus's default selection (the one the review queue starts from: default model
version, AttnLRP, the latest job's template and configuration), so "Review next note" opens the
queue on the maps these numbers count. They are counts of notes, from the database alone: no note
text is read and no peak is computed, so a note the queue will skip (no peak under the profile)
still counts as waiting until it is opened. Two counts a corpus with maps, each stopping at
COUNT_CAP notes so the page costs the same at millions of maps ("10,000+ notes wait").
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.corpus.models import Corpus
from webapp.projects.roles import Capability
from webapp.review import selection
from webapp.review.models import PeakDecision
from webapp.review.queue import selection_maps

COUNT_CAP = 10_000


@dataclass(frozen=True)
class Waiting:
    corpus: Corpus
    with_maps: int  # notes of the corpus with at least one map in the selection (at most COUNT_CAP)
    reviewed: int  # of those, notes the reviewer has at least one decision on
    capped: bool = False  # with_maps stopped at COUNT_CAP: there are more

    @property
    def waiting(self) -> int:
        return self.with_maps - self.reviewed


def waiting_for(reviewer) -> list[Waiting]:
    """Corpora whose notes have maps, the one with most notes waiting first."""
    rows = []
    for corpus in Corpus.objects.visible_to(reviewer, Capability.REVIEW).order_by("name"):
        sel = selection.for_corpus(corpus, {})
        if sel.model is None:
            continue
        maps = selection_maps(corpus, sel)
        with_maps = maps.values("note_id").distinct()[: COUNT_CAP + 1].count()
        if not with_maps:
            continue
        decided = PeakDecision.objects.filter(
            reviewer=reviewer,
            note__corpus=corpus,
            model_version=sel.model,
            method=sel.method,
            template=sel.template,
            config_key=sel.config,
        ).values("note_id")
        reviewed = maps.filter(note_id__in=decided).values("note_id").distinct()[:COUNT_CAP].count()
        capped = with_maps > COUNT_CAP
        rows.append(Waiting(corpus, min(with_maps, COUNT_CAP), reviewed, capped))
    return sorted(rows, key=lambda row: -row.waiting)
