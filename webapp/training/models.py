"""Training runs, the labeled splits they are evaluated on, and what a run leaves behind.

A TrainingRun is one Celery task on the "training" queue (`workers.training.run_training`):
DSM-style training on a DatasetVersion (kinds dsm and cpt; random-mask and one-peak ablations
are kind dsm on a dataset built in that mode), or downstream adaptation and evaluation on a
LabeledSplit (kinds sft, heads, prompting, self_learning). Its full configuration, seed, code
version and library versions are stored on it; its progress lives in a few columns that the
worker updates (`webapp.training.reporting`), its loss / learning-rate curve in RunMetric rows,
its log in RunLog rows (never note text), its predictions in RunPrediction rows. Its status,
attempts, worker and heartbeat are those of every unit of long work (webapp.lifecycle.WorkUnit).

A LabeledSplit freezes the 85/15 train/test split of a corpus's gold items (one item per
annotated (note, task)), so every run of a comparison sees the same one. Its annotations are
protected: a note or annotation used by a split cannot be deleted while the split exists.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import JobStatus, choice_word
from webapp.projects.scoping import ProjectScopedQuerySet


class RunKind(models.TextChoices):
    DSM = "dsm", gettext_lazy("Masked-span training (DSM, random mask, one peak)")
    CPT = "cpt", gettext_lazy("Continual pretraining (unmasked notes)")
    SFT = "sft", gettext_lazy("LoRA SFT (one multi-task model)")
    HEADS = "heads", gettext_lazy("Classification heads on the frozen model (CH)")
    PROMPTING = "prompting", gettext_lazy("Prompting (0-shot / 2-shot)")
    SELF_LEARNING = "self_learning", gettext_lazy("Synthetic-label self-learning (SFT)")


#: Kinds that train a causal LM on a DatasetVersion (and register the result as a ModelVersion).
CAUSAL_KINDS = (RunKind.DSM, RunKind.CPT)
#: Kinds whose training runs across processes (accelerate launch / torchrun): the causal-LM trainer.
DISTRIBUTED_KINDS = (RunKind.DSM, RunKind.CPT, RunKind.SFT)
#: Kinds that fit / evaluate on a LabeledSplit.
LABELED_KINDS = (RunKind.SFT, RunKind.HEADS, RunKind.PROMPTING, RunKind.SELF_LEARNING)


class LabeledSplit(models.Model):
    """A stored train/test split of a corpus's gold items, seeded, at note-item level."""

    corpus = models.ForeignKey(
        "corpus.Corpus", on_delete=models.PROTECT, related_name="splits", verbose_name=gettext_lazy("corpus")
    )
    seed = models.IntegerField(default=0, verbose_name=gettext_lazy("seed"))
    test_ratio = models.FloatField(default=0.15, verbose_name=gettext_lazy("test share"))
    tasks = models.JSONField(
        default=list,
        help_text=gettext_lazy("slugs of the tasks whose gold items it holds, sorted"),
        verbose_name=gettext_lazy("tasks"),
    )
    train_count = models.PositiveIntegerField(default=0, verbose_name=gettext_lazy("training items"))
    test_count = models.PositiveIntegerField(default=0, verbose_name=gettext_lazy("test items"))
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
        verbose_name = gettext_lazy("labeled split")
        verbose_name_plural = gettext_lazy("labeled splits")
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(
                condition=Q(test_ratio__gt=0, test_ratio__lt=1), name="training_split_ratio_between_0_and_1"
            ),
        ]

    def __str__(self):
        return _("split %(split)s of %(corpus)s (seed %(seed)s, test %(ratio)s)") % {
            "split": self.pk,
            "corpus": self.corpus,
            "seed": self.seed,
            "ratio": f"{self.test_ratio:g}",
        }


class SplitItem(models.Model):
    class Part(models.TextChoices):
        TRAIN = "train", gettext_lazy("Train")
        TEST = "test", gettext_lazy("Test")

    split = models.ForeignKey(LabeledSplit, on_delete=models.CASCADE, related_name="items")
    annotation = models.ForeignKey("corpus.Annotation", on_delete=models.PROTECT, related_name="+")
    part = models.CharField(max_length=5, choices=Part.choices)

    class Meta:
        ordering = ["split", "id"]
        constraints = [models.UniqueConstraint(fields=["split", "annotation"], name="training_splititem_unique")]
        indexes = [models.Index(fields=["split", "part"], name="training_splititem_part")]

    def __str__(self):
        return _("split %(split)s %(part)s: annotation %(annotation)s") % {
            "split": self.split_id,
            "part": choice_word(self, "part"),
            "annotation": self.annotation_id,
        }


class TrainingRun(WorkUnit):
    name = models.CharField(max_length=200, blank=True, verbose_name=gettext_lazy("name"))
    kind = models.CharField(max_length=20, choices=RunKind.choices, verbose_name=gettext_lazy("kind"))
    preset = models.CharField(
        max_length=40,
        blank=True,
        help_text=gettext_lazy("the preset the form started from"),
        verbose_name=gettext_lazy("preset"),
    )
    model_version = models.ForeignKey(
        "pipeline.ModelVersion",
        on_delete=models.PROTECT,
        related_name="training_runs",
        help_text=gettext_lazy("the model trained or evaluated"),
        verbose_name=gettext_lazy("model version"),
    )
    dataset = models.ForeignKey(
        "datasets.DatasetVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="training_runs",
        help_text=gettext_lazy("kinds dsm and cpt"),
        verbose_name=gettext_lazy("dataset"),
    )
    split = models.ForeignKey(
        LabeledSplit,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        help_text=gettext_lazy("kinds sft, heads, prompting, self_learning"),
        verbose_name=gettext_lazy("labeled split"),
    )
    config = models.JSONField(
        default=dict,
        help_text=gettext_lazy("the full configuration, by section (see presets.py)"),
        verbose_name=gettext_lazy("configuration"),
    )
    seed = models.IntegerField(default=0, verbose_name=gettext_lazy("seed"))

    phase = models.CharField(
        max_length=60,
        blank=True,
        help_text=gettext_lazy("what the worker is doing now"),
        verbose_name=gettext_lazy("phase"),
    )
    step = models.PositiveIntegerField(default=0, verbose_name=gettext_lazy("step"))
    total_steps = models.PositiveIntegerField(default=0, verbose_name=gettext_lazy("total steps"))
    epoch = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("epoch"))
    loss = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("loss"))
    lr = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("learning rate"))
    tokens_per_s = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("tokens per second"))
    eta_s = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("time left (s)"))
    checkpoint_step = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=gettext_lazy("step of the last checkpoint"),
        verbose_name=gettext_lazy("checkpoint step"),
    )
    output_dir = models.CharField(max_length=1000, blank=True, verbose_name=gettext_lazy("output folder"))

    produced_model = models.OneToOneField(
        "pipeline.ModelVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="produced_by_run",
        verbose_name=gettext_lazy("produced model"),
    )
    results = models.JSONField(
        default=dict,
        blank=True,
        help_text=gettext_lazy("evaluation (see webapp.training.evaluation)"),
        verbose_name=gettext_lazy("results"),
    )
    macro_f1 = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("Macro F1"))
    macro_f1_low = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("Macro F1, 95% CI low"))
    macro_f1_high = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("Macro F1, 95% CI high"))
    held_out_macro_f1 = models.FloatField(null=True, blank=True, verbose_name=gettext_lazy("held-out tasks' Macro F1"))
    provenance = models.JSONField(
        default=dict,
        blank=True,
        help_text=gettext_lazy("code version, library versions, python, host, device"),
        verbose_name=gettext_lazy("provenance"),
    )
    code_version = models.CharField(max_length=64, blank=True, verbose_name=gettext_lazy("code version"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=gettext_lazy("created by"),
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=gettext_lazy("created"))

    project_paths = ("dataset__corpus__project", "split__corpus__project")  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = gettext_lazy("training run")
        verbose_name_plural = gettext_lazy("training runs")
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in CAUSAL_KINDS], dataset__isnull=False)
                | Q(kind__in=[k.value for k in LABELED_KINDS], split__isnull=False),
                name="training_run_has_its_input",
            ),
            models.CheckConstraint(
                condition=Q(step__lte=F("total_steps")) | Q(total_steps=0), name="training_run_step_le_total"
            ),
        ]

    def __str__(self):
        return _("run %(run)s (%(kind)s, %(status)s)") % {
            "run": self.pk,
            "kind": self.get_kind_display(),
            "status": choice_word(self, "status"),
        }

    @property
    def percent(self) -> int:
        return min(100, int(100 * self.step / self.total_steps)) if self.total_steps else 0

    @property
    def phase_text(self) -> str:
        """What the run is doing, in words that agree with its status: the worker's phase only
        while a worker holds the run, so a phase left from an earlier attempt ("cancelled",
        "done") never shows beside "Queued" after a Resume."""
        if self.status == JobStatus.QUEUED:
            if self.checkpoint_step:
                return _("waiting for a training worker; continues from the checkpoint of step %(step)s") % {
                    "step": self.checkpoint_step
                }
            return _("waiting for a training worker")
        if self.status in (JobStatus.RUNNING, JobStatus.CANCELLING):
            return self.phase
        return ""

    @property
    def small_test_set_warning(self) -> str:
        """Said beside a Macro F1 measured on fewer than SMALL_TEST_SET_ITEMS test items; "" otherwise."""
        n_test = (self.results or {}).get("n_test")
        if n_test is None or not (self.results or {}).get("macro_f1") or n_test >= settings.SMALL_TEST_SET_ITEMS:
            return ""
        return ngettext(
            "Measured on only %(count)s test item (fewer than %(limit)s): the Macro F1 and its confidence interval "
            "are too noisy to rely on, and differences between runs may be chance.",
            "Measured on only %(count)s test items (fewer than %(limit)s): the Macro F1 and its confidence interval "
            "are too noisy to rely on, and differences between runs may be chance.",
            n_test,
        ) % {"count": n_test, "limit": settings.SMALL_TEST_SET_ITEMS}

    @property
    def time_left_s(self) -> float | None:
        """The trainer's estimate while a live worker trains; never one for a lost worker."""
        if self.status != JobStatus.RUNNING or self.is_stalled:
            return None
        return self.eta_s

    @property
    def title(self) -> str:
        return self.name or _("Run %(id)s") % {"id": self.pk}


class RunMetric(models.Model):
    """One optimizer step (or head-training epoch) of a run: the loss / learning-rate curve."""

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="metrics")
    phase = models.CharField(max_length=20, default="train", help_text="train, teacher, student, heads")
    step = models.PositiveIntegerField()
    epoch = models.FloatField(null=True, blank=True)
    loss = models.FloatField(null=True, blank=True)
    lr = models.FloatField(null=True, blank=True)
    tokens_per_s = models.FloatField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "phase", "step"]
        constraints = [models.UniqueConstraint(fields=["run", "phase", "step"], name="training_runmetric_unique")]
        # The API's pages of a run's metrics (webapp.db.pagination): WHERE run_id = %s AND id > %s ORDER BY id.
        indexes = [models.Index(fields=["run", "id"], name="training_runmetric_run_id_idx")]

    def __str__(self):
        return _("run %(run)s %(phase)s step %(step)s") % {"run": self.run_id, "phase": self.phase, "step": self.step}


class RunLog(models.Model):
    """A line of a run's log as shown on its page: ids, counts and settings, never note text."""

    run = models.ForeignKey(
        TrainingRun, on_delete=models.CASCADE, related_name="logs", verbose_name=gettext_lazy("training run")
    )
    level = models.CharField(max_length=10, default="info", verbose_name=gettext_lazy("level"))
    message = models.CharField(max_length=500, verbose_name=gettext_lazy("message"))
    created = models.DateTimeField(auto_now_add=True, verbose_name=gettext_lazy("created"))

    class Meta:
        verbose_name = gettext_lazy("training run log line")
        verbose_name_plural = gettext_lazy("training run log lines")
        ordering = ["run", "id"]

    def __str__(self):
        return _("run %(run)s %(level)s: %(message)s") % {
            "run": self.run_id,
            "level": self.level,
            "message": self.message[:60],
        }


class RunPrediction(models.Model):
    """A test item's gold label and predicted label (prompting: one row per variant)."""

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="predictions")
    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="+")
    variant = models.PositiveSmallIntegerField(default=0)
    gold = models.CharField(max_length=200)
    predicted = models.CharField(max_length=200)

    class Meta:
        ordering = ["run", "variant", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "variant", "note", "task"], name="training_prediction_unique")
        ]

    def __str__(self):
        return _("run %(run)s note %(note)s task %(task)s: %(predicted)s") % {
            "run": self.run_id,
            "note": self.note_id,
            "task": self.task_id,
            "predicted": self.predicted,
        }
