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
and heartbeat of every unit of long work (webapp.lifecycle.WorkUnit). The work runs in stages
(`stage`: maps, then faithfulness when asked, then scoring), each with its own `stage_done` of
`stage_total` (prompts, then pairs x configurations, then pairs) and `stage_seconds` (spent on it
by this attempt), so the page shows the stage in hand and its own time left, never 100% while
a stage still runs (the maps can be all done while the faithfulness passes take minutes). A worker that cannot load
the model gives the evaluation back for another worker, as relevance chunks do: `releases` counts
them towards the limit, `lacking` names them on the page.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.functional import lazy
from django.utils.translation import gettext, gettext_lazy, ngettext

from ml.faithfulness import FRACTIONS, PASSES_PER_PAIR, RANDOM_DRAWS
from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.progress import eta, rate
from webapp.lifecycle.status import JobStatus, choice_word
from webapp.projects.scoping import ProjectScopedQuerySet


def faithfulness_help() -> str:
    """The faithfulness field's help, its counts from ml.faithfulness, in the reader's language."""
    return gettext(
        "also measure faithfulness (ml.faithfulness): %(passes)s forward passes per pair for one method with "
        "%(draws)s random draws: the full prompt once, then a deletion and an insertion at each of %(fractions)s "
        "fractions for the method and for each random draw; each further method adds %(further)s"
    ) % {"passes": PASSES_PER_PAIR, "draws": RANDOM_DRAWS, "fractions": len(FRACTIONS), "further": 2 * len(FRACTIONS)}


class RelevanceEvaluation(WorkUnit):
    class Stage(models.TextChoices):
        MAPS = "maps", gettext_lazy("Maps")
        FAITHFULNESS = "faithfulness", gettext_lazy("Faithfulness")
        SCORING = "scoring", gettext_lazy("Scoring")

    # the unit each stage counts
    STAGE_UNITS = {Stage.MAPS: "prompts", Stage.FAITHFULNESS: "pairs", Stage.SCORING: "pairs"}

    corpus = models.ForeignKey(
        "corpus.Corpus",
        on_delete=models.PROTECT,
        related_name="relevance_evaluations",
        verbose_name=gettext_lazy("corpus"),
    )
    model_version = models.ForeignKey(
        "pipeline.ModelVersion",
        on_delete=models.PROTECT,
        related_name="relevance_evaluations",
        verbose_name=gettext_lazy("model version"),
    )
    configs = models.JSONField(
        default=list,
        help_text=gettext_lazy("RelevanceConfig dicts to compare, in the order given"),
        verbose_name=gettext_lazy("configurations"),
    )
    profile = models.ForeignKey(
        "pipeline.PeakProfile",
        on_delete=models.PROTECT,
        related_name="+",
        help_text=gettext_lazy("the peak rule the peak scores are computed with"),
        verbose_name=gettext_lazy("peak profile"),
    )
    tasks = models.ManyToManyField(
        "corpus.Task",
        blank=True,
        related_name="+",
        help_text=gettext_lazy("only these tasks (none: every task with evidence annotations)"),
        verbose_name=gettext_lazy("tasks"),
    )
    max_pairs = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=gettext_lazy("at most this many pairs (none: all)"),
        verbose_name=gettext_lazy("most pairs"),
    )
    seed = models.IntegerField(
        default=0,
        help_text=gettext_lazy("draws the pairs, the bootstrap and the random baseline"),
        verbose_name=gettext_lazy("seed"),
    )
    pairs = models.JSONField(
        default=list,
        help_text=gettext_lazy("[[note id, task id], ...] planned at launch, sorted"),
        verbose_name=gettext_lazy("pairs"),
    )
    pairs_from = models.CharField(
        max_length=20,
        choices=[
            ("evidence", gettext_lazy("annotated evidence pairs")),
            ("notes", gettext_lazy("drawn notes x the chosen tasks")),
        ],
        default="evidence",
        help_text=gettext_lazy("evidence: the pairs with gold evidence spans; notes: any corpus, gold or not"),
        verbose_name=gettext_lazy("pairs from"),
    )
    faithfulness = models.BooleanField(
        default=False,
        help_text=lazy(faithfulness_help, str)(),
        verbose_name=gettext_lazy("faithfulness"),
    )
    seconds_per_pass = models.FloatField(
        null=True,
        blank=True,
        help_text=gettext_lazy("faithfulness: seconds per forward pass"),
        verbose_name=gettext_lazy("seconds per pass"),
    )

    phase = models.CharField(
        max_length=200,
        blank=True,
        help_text=gettext_lazy("what the worker is doing now"),
        verbose_name=gettext_lazy("phase"),
    )
    stage = models.CharField(
        max_length=12,
        choices=Stage.choices,
        blank=True,
        help_text=gettext_lazy("the stage in hand (empty before the first)"),
        verbose_name=gettext_lazy("stage"),
    )
    stage_done = models.PositiveIntegerField(
        default=0, help_text=gettext_lazy("units of the stage done"), verbose_name=gettext_lazy("done in the stage")
    )
    stage_total = models.PositiveIntegerField(
        default=0,
        help_text=gettext_lazy(
            "units of the stage: prompts (maps), pairs x configurations (faithfulness), pairs (scoring)"
        ),
        verbose_name=gettext_lazy("total of the stage"),
    )
    stage_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text=gettext_lazy("seconds this attempt spent on the units of the stage it did (its rate)"),
        verbose_name=gettext_lazy("seconds in the stage"),
    )
    done = models.PositiveIntegerField(
        default=0,
        help_text=gettext_lazy("prompts processed (map stored, or skipped as unusable)"),
        verbose_name=gettext_lazy("prompts done"),
    )
    total = models.PositiveIntegerField(
        default=0, help_text=gettext_lazy("pairs x configurations"), verbose_name=gettext_lazy("prompts")
    )
    seconds_per_prompt = models.FloatField(
        null=True,
        blank=True,
        help_text=gettext_lazy("measured by the current attempt"),
        verbose_name=gettext_lazy("seconds per prompt"),
    )
    result = models.JSONField(
        default=dict,
        blank=True,
        help_text=gettext_lazy("ml.localisation's result (see running.py)"),
        verbose_name=gettext_lazy("result"),
    )
    # releases by workers that could not load the model since the last Resume: {worker: count}
    # (evaluations.release_unloadable, with the release limit of relevance chunks)
    releases = models.JSONField(default=dict, blank=True, verbose_name=gettext_lazy("releases"))
    lacking = models.JSONField(
        default=dict,
        blank=True,
        help_text=gettext_lazy(
            "workers that could not load the model: {worker: {model, reason, releases, at}} "
            "(webapp.evaluation.evaluations.release_unloadable)"
        ),
        verbose_name=gettext_lazy("workers lacking the model"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=gettext_lazy("created by"),
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=gettext_lazy("created"))

    project_paths = ("corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = gettext_lazy("relevance evaluation")
        verbose_name_plural = gettext_lazy("relevance evaluations")
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="evaluation_done_le_total"),
            models.CheckConstraint(
                condition=Q(max_pairs__isnull=True) | Q(max_pairs__gte=1), name="evaluation_max_pairs_positive"
            ),
        ]
        indexes = [models.Index(fields=["corpus", "model_version", "status"], name="evaluation_lookup")]

    def __str__(self):
        return gettext("relevance evaluation %(evaluation)s (%(status)s)") % {
            "evaluation": self.pk,
            "status": choice_word(self, "status"),
        }

    @property
    def stage_units(self) -> str:
        return self.STAGE_UNITS.get(self.stage, "prompts")

    @property
    def progress_done(self) -> int:
        """Done of the stage in hand (the prompts before any stage was reported)."""
        return self.stage_done if self.stage else self.done

    @property
    def progress_total(self) -> int:
        return self.stage_total if self.stage else self.total

    @property
    def stage_text(self) -> str:
        """ "Faithfulness: 12 of 40 pairs" (the maps' prompts before any stage was reported)."""
        label = self.get_stage_display() if self.stage else self.Stage.MAPS.label
        values = {"stage": label, "done": self.progress_done, "total": self.progress_total}
        if self.stage_units == "pairs":
            text = ngettext(
                "%(stage)s: %(done)s of %(total)s pairs", "%(stage)s: %(done)s of %(total)s pairs", self.progress_total
            )
        else:
            text = ngettext(
                "%(stage)s: %(done)s of %(total)s prompts",
                "%(stage)s: %(done)s of %(total)s prompts",
                self.progress_total,
            )
        return text % values

    @property
    def percent(self) -> int:
        """Of the stage in hand; at most 99 while the evaluation has not ended (a stage done is not
        the evaluation done: the faithfulness passes and the scoring follow the maps)."""
        total = self.progress_total
        share = min(100, int(100 * self.progress_done / total)) if total else 0
        if self.status == JobStatus.DONE:
            return 100
        return min(share, 99) if self.is_active else share

    @property
    def eta_seconds(self) -> float | None:
        """Time left in the stage in hand, at this attempt's own rate in it: seconds per prompt for
        the maps, the stage's seconds per unit for faithfulness and scoring (None: not measured
        yet, or nobody computing: never a live estimate for a lost worker)."""
        if self.status != JobStatus.RUNNING or self.is_stalled:
            return None
        if self.stage in ("", self.Stage.MAPS):
            per_second = 1 / self.seconds_per_prompt if self.seconds_per_prompt else None
            left = self.total - self.done
        else:
            per_second = rate(self.stage_done, self.stage_seconds)
            left = self.stage_total - self.stage_done
        left_time = eta(left, per_second)
        return None if left_time is None else left_time.total_seconds()

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def recommendation(self) -> dict:
        """{"choice": {...} | None, "reason": "..."} once scored, else {}."""
        return self.result.get("recommended") or {}
