"""Counts shown on overview pages, in a fixed number of queries (no per-corpus loops, and no
count over notes at all: the corpus rows carry counters that triggers keep, on PostgreSQL and
SQLite; review decisions are counted on SQLite, where no trigger keeps the task's counter)."""

from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Q
from django.utils.translation import gettext as _

from webapp.corpus.models import Corpus, Task


@dataclass
class CorpusSummary:
    corpus: Corpus
    notes: int
    annotations: int


def corpus_summaries(user) -> list[CorpusSummary]:
    """Every corpus the user may see, with its notes and annotations: the counters the database's
    triggers keep (corpus migrations 0005 on PostgreSQL, 0016 on SQLite), one query whatever the
    corpus sizes; the API answers the same figures."""
    corpora = Corpus.objects.visible_to(user).select_related("project")
    return [CorpusSummary(c, c.note_count, c.annotation_count) for c in corpora]


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
    return [(row["group"] or _("(no group)"), row["n"], row["held_out"]) for row in rows]
