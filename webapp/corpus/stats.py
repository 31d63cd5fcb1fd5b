"""Counts shown on overview pages, in a fixed number of grouped queries (no per-corpus loops)."""
from dataclasses import dataclass

from django.db.models import Count, Q

from webapp.corpus.models import Annotation, Corpus, Note, Task


@dataclass
class CorpusSummary:
    corpus: Corpus
    notes: int
    annotations: int


def corpus_summaries() -> list[CorpusSummary]:
    notes = dict(Note.objects.order_by().values_list("corpus").annotate(n=Count("id")))
    annotations = dict(Annotation.objects.order_by().values_list("note__corpus").annotate(n=Count("id")))
    return [CorpusSummary(c, notes.get(c.pk, 0), annotations.get(c.pk, 0)) for c in Corpus.objects.all()]


def task_groups() -> list[tuple[str, int, int]]:
    """(group, tasks, held-out tasks), sorted by group name."""
    rows = Task.objects.order_by("group").values("group").annotate(n=Count("id"), held_out=Count("id", filter=Q(held_out=True)))
    return [(row["group"] or "(no group)", row["n"], row["held_out"]) for row in rows]
