"""Counts shown on overview pages, in a fixed number of queries (no per-corpus loops, and on
PostgreSQL no count over notes or review decisions at all: the corpus and task rows carry
counters)."""

from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Q

from webapp.corpus.models import Annotation, Corpus, Note, Task


@dataclass
class CorpusSummary:
    corpus: Corpus
    notes: int
    annotations: int


def corpus_summaries(user) -> list[CorpusSummary]:
    """Every corpus the user may see, with its notes and annotations: on PostgreSQL the counters its triggers keep
    (one query, whatever the corpus sizes); elsewhere (SQLite, small corpora) counted."""
    corpora = list(Corpus.objects.visible_to(user).select_related("project"))
    if connection.vendor == "postgresql":
        return [CorpusSummary(c, c.note_count, c.annotation_count) for c in corpora]
    ids = [c.pk for c in corpora]
    notes = dict(Note.objects.filter(corpus__in=ids).order_by().values_list("corpus").annotate(n=Count("id")))
    annotations = dict(
        Annotation.objects.filter(note__corpus__in=ids).order_by().values_list("note__corpus").annotate(n=Count("id"))
    )
    return [CorpusSummary(c, notes.get(c.pk, 0), annotations.get(c.pk, 0)) for c in corpora]


@dataclass
class TaskSummary:
    task: Task
    decisions: int  # review decisions on record, one per reviewer and peak


def task_summaries(user) -> list[TaskSummary]:
    """Every task the user may see (the catalog, their projects' own), by group and slug, with its
    review decisions: on PostgreSQL the counter the review triggers keep (one query); elsewhere
    counted."""
    tasks = Task.objects.visible_to(user).select_related("project").order_by("group", "slug")
    if connection.vendor == "postgresql":
        return [TaskSummary(t, t.decision_count) for t in tasks]
    return [TaskSummary(t, t.counted) for t in tasks.annotate(counted=Count("peak_decisions"))]


def task_groups(user) -> list[tuple[str, int, int]]:
    """(group, tasks, held-out tasks) of the tasks the user may see (the catalog, their projects'
    own), sorted by group name."""
    rows = (
        Task.objects.visible_to(user)
        .order_by("group")
        .values("group")
        .annotate(n=Count("id"), held_out=Count("id", filter=Q(held_out=True)))
    )
    return [(row["group"] or "(no group)", row["n"], row["held_out"]) for row in rows]
