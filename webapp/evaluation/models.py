"""Relevance evaluations: which relevance configuration localises a corpus's evidence best.

A RelevanceEvaluation compares configurations (`configs`: RelevanceConfig dicts, method x
explain x template ...) of one model version on (note, task) pairs of a corpus (`pairs`,
planned once at launch, at most `max_pairs` of them, drawn with `seed`): the annotated pairs
with evidence spans (`pairs_from="evidence"`), or drawn notes x the chosen tasks (`"notes"`: any
corpus, gold or not; localisation is then measured only where gold exists). Task-specificity
is always measured; faithfulness when `faithfulness` is set. One Celery task on the relevance
queue (`workers.evaluation.run_evaluation`) computes the missing maps of every configuration
into RelevanceMap (the same rows relevance jobs write, so nothing is computed twice), then
scores them (ml.localisation, ml.specificity, ml.faithfulness) under the peak profile and
stores the result (`result`, see webapp.evaluation.running).

Progress lives in a few columns the worker updates: `done` of `total` prompts (pairs x
configurations; maps already stored count as done), `phase`, and the status, attempts, worker
and heartbeat of every unit of long work (webapp.lifecycle.WorkUnit). A worker that cannot load
the model gives the evaluation back for another worker, as relevance chunks do: `releases` counts
them towards the limit, `lacking` names them on the page.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import JobStatus
from webapp.projects.scoping import ProjectScopedQuerySet


class RelevanceEvaluation(WorkUnit):
    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.PROTECT, related_name="relevance_evaluations")
    model_version = models.ForeignKey(
        "pipeline.ModelVersion", on_delete=models.PROTECT, related_name="relevance_evaluations"
    )
    configs = models.JSONField(default=list, help_text="RelevanceConfig dicts to compare, in the order given")
    profile = models.ForeignKey(
        "pipeline.PeakProfile",
        on_delete=models.PROTECT,
        related_name="+",
        help_text="the peak rule the peak scores are computed with",
    )
    tasks = models.ManyToManyField(
        "corpus.Task",
        blank=True,
        related_name="+",
        help_text="only these tasks (none: every task with evidence annotations)",
    )
    max_pairs = models.PositiveIntegerField(null=True, blank=True, help_text="at most this many pairs (none: all)")
    seed = models.IntegerField(default=0, help_text="draws the pairs, the bootstrap and the random baseline")
    pairs = models.JSONField(default=list, help_text="[[note id, task id], ...] planned at launch, sorted")
    pairs_from = models.CharField(
        max_length=20,
        choices=[("evidence", "annotated evidence pairs"), ("notes", "drawn notes x the chosen tasks")],
        default="evidence",
        help_text="evidence: the pairs with gold evidence spans; notes: any corpus, gold or not",
    )
    faithfulness = models.BooleanField(
        default=False,
        help_text="also measure faithfulness (ml.faithfulness: 12 forward passes per pair and configuration)",
    )
    seconds_per_pass = models.FloatField(null=True, blank=True, help_text="faithfulness: seconds per forward pass")

    phase = models.CharField(max_length=200, blank=True, help_text="what the worker is doing now")
    done = models.PositiveIntegerField(default=0, help_text="prompts processed (map stored, or skipped as unusable)")
    total = models.PositiveIntegerField(default=0, help_text="pairs x configurations")
    seconds_per_prompt = models.FloatField(null=True, blank=True, help_text="measured by the current attempt")
    result = models.JSONField(default=dict, blank=True, help_text="ml.localisation's result (see running.py)")
    # releases by workers that could not load the model since the last Resume: {worker: count}
    # (evaluations.release_unloadable, with the release limit of relevance chunks)
    releases = models.JSONField(default=dict, blank=True)
    lacking = models.JSONField(
        default=dict,
        blank=True,
        help_text="workers that could not load the model: {worker: {model, reason, releases, at}} "
        "(webapp.evaluation.evaluations.release_unloadable)",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)

    project_paths = ("corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="evaluation_done_le_total"),
            models.CheckConstraint(
                condition=Q(max_pairs__isnull=True) | Q(max_pairs__gte=1), name="evaluation_max_pairs_positive"
            ),
        ]
        indexes = [models.Index(fields=["corpus", "model_version", "status"], name="evaluation_lookup")]

    def __str__(self):
        return f"relevance evaluation {self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        return min(100, int(100 * self.done / self.total)) if self.total else 0

    @property
    def eta_seconds(self) -> float | None:
        """Time left computing maps, at the current attempt's pace (None: not measured yet, or
        nobody computing: never a live estimate for a lost worker)."""
        if self.status != JobStatus.RUNNING or self.is_stalled or not self.seconds_per_prompt:
            return None
        return (self.total - self.done) * self.seconds_per_prompt

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def recommendation(self) -> dict:
        """{"choice": {...} | None, "reason": "..."} once scored, else {}."""
        return self.result.get("recommended") or {}
