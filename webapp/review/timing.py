"""Time per review: the active time reviewers spend per decision, and what the rest would cost.

Each decision may carry `active_ms` (PeakDecision; the review page's clock, idle gaps over 60 s
cut, see static/review/review.js); decisions without it are left out of the figures, never
counted as zero. Reported: the median seconds per decision of each reviewer and of each task.

Estimate, per task: judgements left x peaks per pair x median seconds per decision, where
- judgements left: over the task's (note, task) pairs with relevance maps under the report's
  filters (not retired tasks), K reviewers per pair less those who decided a peak of it already
  (none below 0): on a round of 3 reviewers, a pair one of them decided still needs 2; K is the
  report's choice, else the largest k of the review rounds under the filters, else 2;
- undecided pairs (shown): those no reviewer has decided any peak of;
- peaks per pair: the mean number of decisions one reviewer made on a pair of the task (over the
  reviewer-pairs with decisions), as a stand-in for its peaks (pairs with no peak under the
  setting used are counted as pairs, so the figure errs high);
- median seconds per decision of the task.
The total is the sum over tasks with a median; a task with no timed decision has no estimate and
is named.

A review round (`round_time`) knows exactly what is left: its judgements still to make (pairs x k
minus those finished), each a pair's drawn peaks; the median seconds per decision are the round's
own timed decisions, else those of its tasks on the corpus (said which), else none yet.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median

from django.db.models import Count, Exists, OuterRef
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from webapp.pipeline.models import RelevanceMap
from webapp.review.models import PeakDecision


@dataclass(frozen=True)
class TimeFigure:
    name: str
    timed: int  # decisions with an active time
    median_s: float | None


@dataclass(frozen=True)
class TaskEstimate:
    name: str
    timed: int
    median_s: float | None
    undecided_pairs: int
    peaks_per_pair: float | None
    hours: float | None  # for the report's number of reviewers; None: no timed decision
    judgements_left: int = 0  # pairs x reviewers, less the reviewers who decided each pair


@dataclass
class ReviewTime:
    reviewers: list[TimeFigure] = field(default_factory=list)
    tasks: list[TaskEstimate] = field(default_factory=list)
    reviewer_count: int = 2

    @property
    def hours(self) -> float:
        return sum(t.hours for t in self.tasks if t.hours is not None)

    @property
    def untimed_tasks(self) -> list[str]:
        return [t.name for t in self.tasks if t.hours is None and t.judgements_left]

    @property
    def shown(self) -> str:
        """The total as the report says it: "1.5 h", or minutes under an hour ("0.0 h" said
        nothing of 2 minutes left)."""
        return duration_text(self.hours)


def duration_text(hours: float) -> str:
    if hours >= 1 or hours == 0:
        return _("%(hours)s h") % {"hours": number_format(round(hours, 1), 1)}
    return _("%(minutes)s min") % {"minutes": max(round(hours * 60), 1)}


def estimate_hours(judgements: int, peaks_per_pair: float, median_s: float) -> float:
    """Hours of review for `judgements` pair judgements of `peaks_per_pair` peaks each."""
    return judgements * peaks_per_pair * median_s / 3600


def judgements_left(pairs: int, reviewers_on_decided: list[int], reviewers: int) -> int:
    """The judgements still to make on `pairs` pairs when each needs `reviewers`, given how many
    reviewers decided each of the decided ones (the others have none)."""
    return max(pairs * reviewers - sum(min(done, reviewers) for done in reviewers_on_decided), 0)


def _reviewers_per_pair(user, corpus, model, method) -> int:
    """The largest k of the review rounds `user` may see under the filters, else 2."""
    from webapp.review.models import ReviewRound

    rounds = ReviewRound.objects.visible_to(user)
    if corpus is not None:
        rounds = rounds.filter(corpus=corpus)
    if model is not None:
        rounds = rounds.filter(model_version=model)
    if method:
        rounds = rounds.filter(method=method)
    return max(rounds.values_list("k", flat=True), default=2)


def review_time(
    user, corpus=None, model=None, method: str | None = None, *, reviewers: int | None = None
) -> ReviewTime:
    """Time per decision and the hours left, over what `user` may see; `reviewers` per pair, by
    default those of the review rounds under the filters (module docstring)."""
    if reviewers is None:
        reviewers = _reviewers_per_pair(user, corpus, model, method)
    decisions = PeakDecision.objects.visible_to(user)
    maps = RelevanceMap.objects.visible_to(user)
    return time_from_parts(time_parts(decisions, maps, corpus, model, method), reviewers)


def stored_review_time(
    parts: dict, user, corpus=None, model=None, method: str | None = None, *, reviewers: int | None = None
) -> ReviewTime:
    """review_time from stored `time_parts` (the review report's): only the reviewers per pair by
    default is read now (the review rounds under the filters)."""
    if reviewers is None:
        reviewers = _reviewers_per_pair(user, corpus, model, method)
    return time_from_parts(parts, reviewers)


def time_parts(decisions, maps, corpus=None, model=None, method: str | None = None) -> dict:
    """What the time figures need whatever the number of reviewers per pair, as JSON (the review
    report stores it, webapp.review.report_store): per reviewer the seconds' median; per task its
    name, timed decisions, median, undecided pairs, peaks per pair, pairs with maps, and how many
    pairs each number of reviewers decided. `decisions` and `maps`: the querysets to read."""
    maps = maps.filter(task__retired=False)
    if corpus is not None:
        decisions, maps = decisions.filter(note__corpus=corpus), maps.filter(note__corpus=corpus)
    if model is not None:
        decisions, maps = decisions.filter(model_version=model), maps.filter(model_version=model)
    if method:
        decisions, maps = decisions.filter(method=method), maps.filter(config__method=method)

    by_reviewer, by_task = defaultdict(list), defaultdict(list)
    per_pair: dict[tuple, int] = defaultdict(int)  # (task, note, reviewer) -> decisions
    for task_id, note_id, reviewer, active_ms in decisions.values_list(
        "task_id", "note_id", "reviewer__username", "active_ms"
    ):
        per_pair[(task_id, note_id, reviewer)] += 1
        if active_ms is not None:
            by_reviewer[reviewer].append(active_ms / 1000)
            by_task[task_id].append(active_ms / 1000)
    decisions_per_pair: dict[int, list[int]] = defaultdict(list)
    reviewers_on: dict[tuple, int] = defaultdict(int)  # (task, note) -> reviewers who decided
    for (task_id, note_id, _reviewer), n in per_pair.items():
        decisions_per_pair[task_id].append(n)
        reviewers_on[(task_id, note_id)] += 1
    done_by_task: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))  # reviewers -> pairs
    for (task_id, _note_id), n in reviewers_on.items():
        done_by_task[task_id][n] += 1

    undecided = (
        maps.filter(~Exists(PeakDecision.objects.filter(note=OuterRef("note"), task=OuterRef("task"))))
        .order_by()
        .values("task_id", "task__description")
        .annotate(pairs=Count("note_id", distinct=True))
    )
    undecided_count = {row["task_id"]: row["pairs"] for row in undecided}
    mapped_count = dict(
        maps.order_by()
        .values("task_id")
        .annotate(pairs=Count("note_id", distinct=True))
        .values_list("task_id", "pairs")
    )
    names = {row["task_id"]: row["task__description"] for row in undecided}
    names.update(dict(decisions.order_by().values_list("task_id", "task__description").distinct()))
    tasks = []
    for task_id in sorted(names, key=lambda pk: names[pk].casefold()):
        seconds = by_task.get(task_id, [])
        counts = decisions_per_pair.get(task_id, [])
        done = done_by_task.get(task_id, {}) if task_id in mapped_count else {}
        tasks.append(
            {
                "name": names[task_id],
                "timed": len(seconds),
                "median_s": median(seconds) if seconds else None,
                "undecided_pairs": undecided_count.get(task_id, 0),
                "peaks_per_pair": sum(counts) / len(counts) if counts else None,
                "mapped_pairs": mapped_count.get(task_id, 0),
                "decided_pairs_by_reviewers": [[n, pairs] for n, pairs in sorted(done.items())],
            }
        )
    reviewers = [
        [name, len(seconds), median(seconds) if seconds else None] for name, seconds in sorted(by_reviewer.items())
    ]
    return {"reviewers": reviewers, "tasks": tasks}


def time_from_parts(parts: dict, reviewers: int) -> ReviewTime:
    """The time figures for `reviewers` per pair from `time_parts`."""
    out = ReviewTime(reviewer_count=reviewers)
    out.reviewers = [TimeFigure(name, timed, median_s) for name, timed, median_s in parts["reviewers"]]
    for task in parts["tasks"]:
        decided = [n for n, pairs in task["decided_pairs_by_reviewers"] for _ in range(pairs)]
        left = judgements_left(task["mapped_pairs"], decided, reviewers)
        median_s, per = task["median_s"], task["peaks_per_pair"]
        hours = estimate_hours(left, per, median_s) if median_s is not None and per is not None else None
        out.tasks.append(TaskEstimate(task["name"], task["timed"], median_s, task["undecided_pairs"], per, hours, left))
    return out


@dataclass
class RoundTime:
    judgements_left: int
    peaks_per_pair: float
    median_s: float | None
    timed_decisions: int
    source: str  # "this round" | "these tasks on this corpus" | ""
    reviewers: int

    @property
    def hours(self) -> float | None:
        if self.median_s is None:
            return None
        return self.judgements_left * self.peaks_per_pair * self.median_s / 3600

    @property
    def hours_per_reviewer(self) -> float | None:
        return None if self.hours is None or not self.reviewers else self.hours / self.reviewers


def round_time(rnd) -> RoundTime:
    """What the rest of round `rnd` would cost (module docstring)."""
    from webapp.review.models import RoundClaim, RoundPair

    pairs = list(RoundPair.objects.filter(round=rnd).values_list("note_id", "task_id", "peaks"))
    peaks_per_pair = sum(len(p[2]) for p in pairs) / len(pairs) if pairs else 0.0
    done = RoundClaim.objects.filter(round=rnd, done__isnull=False).count()
    left = max(len(pairs) * rnd.k - done, 0)
    timed = PeakDecision.objects.filter(
        note__corpus=rnd.corpus_id,
        model_version=rnd.model_version_id,
        method=rnd.method,
        template=rnd.template,
        active_ms__isnull=False,
    )
    wanted = {(note, task) for note, task, _ in pairs}
    mine = [ms for note, task, ms in timed.values_list("note_id", "task_id", "active_ms") if (note, task) in wanted]
    source = _("this round")
    if not mine:
        mine = list(timed.filter(task__in=rnd.tasks.all()).values_list("active_ms", flat=True))
        source = _("these tasks on this corpus")
    reviewers = rnd.members.filter(removed__isnull=True).count()
    median_s = median(mine) / 1000 if mine else None
    return RoundTime(left, peaks_per_pair, median_s, len(mine), source if mine else "", reviewers)
