"""Model versions, peak profiles, relevance jobs and the relevance maps they store.

A relevance job is split into chunks of (note, task) prompts; each chunk is one Celery task.
A job stores its ml.relevance.RelevanceConfig (method, explain, normalise, template, truncation,
dtype, contrastive neutral text) and every map the key of the configuration that made it.
Maps are upserted on (note, task, model version, config key), so a chunk that runs twice
writes nothing twice, and the job's progress is derived from its chunks. Maps of two
configurations never meet in one comparison: select them with `RelevanceMap.objects.for_config()`.
"""

import numpy as np
from django.conf import settings
from django.db import models
from django.db.models import F, Max, Q
from django.utils import timezone

from ml.codec import decode_map, encode_map
from ml.peaks import PAPER, PeakParams
from ml.relevance import RelevanceConfig, default_config_key
from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import HELD, JobStatus  # noqa: F401 - JobStatus is imported from here by the apps
from webapp.lifecycle.units import lost, stale_before


class ModelVersion(models.Model):
    """A language model the pipeline can use: the default, a local folder, or a trained model."""

    name = models.CharField(max_length=200, unique=True)
    family = models.CharField(max_length=40, help_text="llama, qwen2, qwen3, gemma3")
    path = models.CharField(max_length=1000, help_text="Registry name, local folder, or hub id")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    produced_by = models.CharField(max_length=200, blank=True, help_text="The training run that produced it")
    is_default = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="pipeline_modelversion_name_not_blank"),
            models.CheckConstraint(condition=~Q(path=""), name="pipeline_modelversion_path_not_blank"),
            models.UniqueConstraint(
                fields=["is_default"], condition=Q(is_default=True), name="pipeline_modelversion_one_default"
            ),
        ]

    def __str__(self):
        return self.name


class PeakProfile(models.Model):
    """Named, versioned smoothing and threshold parameters (the paper's default: 3 / 1.0 / 0.2 / 0.4)."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    # defaults: the paper's, from ml.peaks.PAPER (kernel 3, sigma 1.0, lower 0.2, upper 0.4)
    kernel_size = models.PositiveSmallIntegerField(default=PAPER.kernel_size)
    sigma = models.FloatField(default=PAPER.sigma)
    lower = models.FloatField(default=PAPER.lower)
    upper = models.FloatField(default=PAPER.upper)
    strict = models.BooleanField(default=False, help_text="Reference code's > for both thresholds (paper: >=)")
    trim = models.BooleanField(
        default=True,
        help_text="Trim punctuation and whitespace off peak edges; drop peaks with no letter or digit "
        "(off: the reference code's peaks, for comparison)",
    )
    is_default = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="pipeline_peakprofile_name_version"),
            models.UniqueConstraint(
                fields=["is_default"], condition=Q(is_default=True), name="pipeline_peakprofile_one_default"
            ),
            models.CheckConstraint(condition=Q(kernel_size__gte=1), name="pipeline_peakprofile_kernel_positive"),
            models.CheckConstraint(condition=Q(sigma__gt=0), name="pipeline_peakprofile_sigma_positive"),
            models.CheckConstraint(
                condition=Q(lower__gte=0, upper__lte=1, lower__lte=F("upper")),
                name="pipeline_peakprofile_thresholds_ordered",
            ),
        ]

    def __str__(self):
        return f"{self.name} v{self.version}"

    @property
    def params(self) -> PeakParams:
        return PeakParams(
            kernel_size=self.kernel_size,
            sigma=self.sigma,
            lower=self.lower,
            upper=self.upper,
            strict=self.strict,
            trim=self.trim,
        )


class RelevanceJob(WorkUnit):
    class TaskSelection(models.TextChoices):
        ALL = "all", "All tasks"
        LIST = "list", "Chosen tasks"
        SAMPLE = "sample", "Random k tasks per note"

    class Method(models.TextChoices):
        ATTNLRP = "attnlrp", "AttnLRP"
        ATTENTION = "attention", "Mean attention"
        GRAD_INPUT = "grad_input", "Gradient x input"

    class Explain(models.TextChoices):  # ml.relevance.EXPLAIN
        NEXT = "next", "Next token after the middle of s_T (reference code)"
        MAX = "max", "Top logit before the middle of s_T"
        TARGET = "target", "The middle token of s_T"
        SPAN = "span", "Every token of s_T, summed"
        CONTRASTIVE = "contrastive", "s_T minus a neutral description"

    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.PROTECT, related_name="relevance_jobs")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="relevance_jobs")
    method = models.CharField(max_length=20, choices=Method.choices, default=Method.ATTNLRP)
    template = models.CharField(max_length=500, default="en", help_text="'en', 'it', 'es' or a custom template")
    explain = models.CharField(max_length=20, choices=Explain.choices, default=Explain.NEXT)
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text="The whole ml.relevance.RelevanceConfig (to_dict); method, template and "
        "explain are copied into their columns",
    )
    config_key = models.CharField(max_length=64, blank=True, db_index=True, help_text="RelevanceConfig.key")
    task_selection = models.CharField(max_length=10, choices=TaskSelection.choices, default=TaskSelection.SAMPLE)
    tasks = models.ManyToManyField("corpus.Task", blank=True, related_name="+")
    sample_k = models.PositiveSmallIntegerField(default=9)
    seed = models.IntegerField(default=0)
    note_filter = models.JSONField(default=dict, blank=True, help_text="e.g. {'ids': [...]} or {'limit': 200}")
    chunk_size = models.PositiveIntegerField(default=64)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.PLANNING, db_index=True)
    total = models.PositiveIntegerField(default=0, help_text="prompts in the job (known once planned)")
    # Counters kept by the chunks as they end (one UPDATE each, never a SUM over the chunks).
    done = models.PositiveIntegerField(default=0, help_text="prompts in finished chunks")
    chunk_count = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    chunks_failed = models.PositiveIntegerField(default=0)
    chunks_cancelled = models.PositiveIntegerField(default=0)
    seconds_done = models.FloatField(default=0.0, help_text="seconds of computing of the finished chunks")
    # Planning (by a worker, never in the web request): notes read so far of notes_total.
    notes_total = models.PositiveIntegerField(default=0)
    notes_planned = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="pipeline_relevancejob_done_le_total"),
            models.CheckConstraint(condition=Q(chunk_size__gte=1), name="pipeline_relevancejob_chunk_positive"),
        ]

    def __str__(self):
        return f"relevance job {self.pk} ({self.status})"

    def save(self, *args, **kwargs):
        self.set_config(self.relevance_config)
        super().save(*args, **kwargs)

    @property
    def relevance_config(self) -> RelevanceConfig:
        """The job's configuration (a job created without one: the default of its columns)."""
        if not self.config:
            return RelevanceConfig(method=self.method, template=self.template, explain=self.explain)
        config = RelevanceConfig.from_dict(self.config)
        if (config.method, config.template, config.explain) != (self.method, self.template, self.explain):
            raise ValueError(f"relevance job {self.pk}: method, template or explain differ from its config")
        return config

    def set_config(self, config: RelevanceConfig) -> None:
        self.method, self.template, self.explain = config.method, config.template, config.explain
        self.config, self.config_key = config.to_dict(), config.key

    def refresh_from_db(self, *args, **kwargs):
        self.__dict__.pop("_lost_at", None)
        super().refresh_from_db(*args, **kwargs)

    def stalled_since(self, now=None):
        """When the worker was last heard of, if a worker of this job is lost: the planner while
        planning, else the latest of its running chunks whose worker stopped beating (the
        recovery sweeper queues those again within seconds, if any worker is alive)."""
        if self.status == JobStatus.PLANNING:
            stale = self.worker and self.heartbeat and self.heartbeat < stale_before(now or timezone.now())
            return self.heartbeat if stale else None
        if self.status not in HELD:
            return None
        if now is not None:
            return self.chunks.filter(lost(now)).aggregate(last=Max("heartbeat"))["last"]
        if not hasattr(self, "_lost_at"):  # a page asks twice (badge class and text): one query
            self._lost_at = self.chunks.filter(lost()).aggregate(last=Max("heartbeat"))["last"]
        return self._lost_at


class RelevanceChunk(WorkUnit):
    """A slice of a job's prompts; one Celery task. `pairs` holds [note_id, task_id] pairs.
    A chunk of a cancelled job ends cancelled (it is skipped)."""

    Status = JobStatus

    job = models.ForeignKey(RelevanceJob, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    pairs = models.JSONField()
    size = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    seconds = models.FloatField(null=True, blank=True)
    # attempts only grow (a worker writes only while the number is its own); Resume records where
    # the chunk's new series of attempts starts, for the give-up rule (chunks.MAX_ATTEMPTS)
    attempts_before_resume = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["job", "index"]
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="pipeline_chunk_job_index")]
        indexes = [
            models.Index(fields=["job", "status"], name="pipeline_chunk_job_status"),
            models.Index(fields=["status", "heartbeat"], name="pipeline_chunk_sweep"),
            # the job page lists the first chunks with a message: a small index, not a scan of the job
            models.Index(fields=["job", "index"], condition=~Q(error=""), name="pipeline_chunk_errors"),
        ]

    def __str__(self):
        return f"job {self.job_id} chunk {self.index} ({self.status})"


class MixedConfigurations(ValueError):
    """Relevance jobs of different configurations were chosen where maps of one are needed."""


def resolve_config_key(method: str, template: str, config_key: str = "", *, jobs=()) -> str:
    """The configuration key `for_config` selects: `config_key`, else the one of `jobs`
    (MixedConfigurations if they differ), else the default of the method and template."""
    if not config_key and jobs:
        keys = set(
            RelevanceJob.objects.filter(pk__in=[getattr(j, "pk", j) for j in jobs]).values_list("config_key", flat=True)
        )
        if len(keys) > 1:
            raise MixedConfigurations(
                "these relevance jobs were computed with different configurations: choose jobs of one configuration"
            )
        config_key = next(iter(keys), "")
    return config_key or default_config_key(method, template)


# The key of a map: one per note, task, model version and relevance configuration.
MAP_KEY = ["note", "task", "model_version", "config_key"]


class RelevanceMapQuerySet(models.QuerySet):
    def for_config(self, method: str, template: str, config_key: str = "", *, jobs=()) -> "RelevanceMapQuerySet":
        """Maps made by ONE relevance configuration of this method and template, so that two
        configurations never mix in a comparison, a review page or a dataset.

        config_key: a RelevanceConfig.key. Empty: the configuration of `jobs` (ids or jobs;
        ValueError if they differ), or without jobs the DEFAULT configuration of the method and
        template (explain "next", normalise "abs", truncate "right", dtype "auto"), which is
        what every map stored before configurations were recorded was made with."""
        return self.filter(
            method=method, template=template, config_key=resolve_config_key(method, template, config_key, jobs=jobs)
        )

    def store(
        self, computed, *, model_version_id: int, method: str, template: str, config_key: str, job_id: int | None = None
    ) -> int:
        """Upsert one map per ((note_id, task_id), RelevanceResult) of `computed`, keyed by
        (note, task, model version, configuration): a batch stored twice writes nothing twice, and
        a map computed again replaces the earlier one. Returns the count."""
        maps = [
            RelevanceMap(
                note_id=note_id,
                task_id=task_id,
                model_version_id=model_version_id,
                method=method,
                template=template,
                config_key=config_key,
                job_id=job_id,
                n_tokens=len(result.scores),
                target_token=result.target_token[:100],
                data=RelevanceMap.encode(result.offsets, result.scores),
            )
            for (note_id, task_id), result in computed
        ]
        if maps:
            updated = ["n_tokens", "target_token", "data"] + (["job"] if job_id is not None else [])
            self.bulk_create(maps, update_conflicts=True, unique_fields=MAP_KEY, update_fields=updated)
        return len(maps)


class RelevanceMap(models.Model):
    """Relevance of every note token for one task, by one model version and relevance configuration.

    `config_key` is the RelevanceConfig.key of the job that made it (method and template are
    also kept as columns, for display and filtering); a map saved without one gets the default
    configuration of its method and template.
    `data` is the compact encoding of ml.codec (float16 scores, delta-coded offsets; ~6 bytes a token)."""

    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="relevance_maps")
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="relevance_maps")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="relevance_maps")
    method = models.CharField(max_length=20)
    template = models.CharField(max_length=500)
    config_key = models.CharField(max_length=64, help_text="RelevanceConfig.key of the configuration that made it")
    job = models.ForeignKey(RelevanceJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="maps")
    n_tokens = models.PositiveIntegerField()
    target_token = models.CharField(max_length=100, blank=True)
    data = models.BinaryField()
    created = models.DateTimeField(auto_now_add=True)

    objects = RelevanceMapQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["note", "task", "model_version", "config_key"], name="pipeline_relevancemap_unique_config"
            ),
        ]
        indexes = [
            models.Index(fields=["model_version", "config_key", "task", "note"], name="pipeline_map_config_lookup"),
            models.Index(fields=["job"], name="pipeline_map_job"),
        ]

    def __str__(self):
        return f"map note={self.note_id} task={self.task_id} model={self.model_version_id} {self.config_key}"

    def save(self, *args, **kwargs):
        if not self.config_key:
            self.config_key = default_config_key(self.method, self.template)
        super().save(*args, **kwargs)

    @classmethod
    def encode(cls, offsets, scores) -> bytes:
        return encode_map(offsets, scores)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets int32 (n, 2), scores float32 (n,))."""
        return decode_map(self.data)
