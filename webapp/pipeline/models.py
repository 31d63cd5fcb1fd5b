"""Model versions, peak profiles, relevance jobs and the relevance maps they store.

A relevance job is split into chunks of (note, task) prompts; each chunk is one Celery task.
A job stores its ml.relevance.RelevanceConfig (method, explain, normalise, template, truncation,
dtype, contrastive neutral text) and every map the configuration that made it (a small integer
naming a MapConfiguration row: method, template, key). A map keeps its float16 scores; its note's
token offsets are stored once (NoteTokens), shared by the note's maps tokenized alike, and
`RelevanceMap.objects.with_arrays()` reads both in one query. Maps are upserted on (note, task,
model version, configuration), so a chunk that runs twice writes nothing twice, and the job's
progress is derived from its chunks. Maps of two configurations never meet in one comparison:
select them with `RelevanceMap.objects.for_config()`.
"""

from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import connection, models
from django.db.models import F, Max, Q
from django.db.models.query import ValuesListIterable
from django.utils import timezone
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from ml.codec import decode_arrays, encode_offsets, encode_scores, offsets_digest
from ml.peaks import PAPER, PeakParams
from ml.relevance import RelevanceConfig, default_config_key
from ml.relevance import methods as relevance_methods
from webapp.db.planner_stats import analyze
from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import HELD, JobStatus, choice_word  # noqa: F401 - JobStatus is imported from here by the apps
from webapp.lifecycle.units import lost, stale_before
from webapp.projects.scoping import ProjectScopedQuerySet


class ModelVersion(models.Model):
    """A language model the pipeline can use: the default, a local folder, or a trained model."""

    name = models.CharField(max_length=200, unique=True, verbose_name=_("name"))
    family = models.CharField(max_length=40, help_text=_("llama, qwen2, qwen3, gemma3"), verbose_name=_("family"))
    path = models.CharField(
        max_length=1000, help_text=_("Registry name, local folder, or hub id"), verbose_name=_("path")
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children", verbose_name=_("parent model")
    )
    produced_by = models.CharField(
        max_length=200, blank=True, help_text=_("The training run that produced it"), verbose_name=_("produced by")
    )
    is_default = models.BooleanField(default=False, verbose_name=_("default"))
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    # webapp.projects.scoping: a trained model belongs to its run's project; a base model to none.
    # A model listed as trained on erased data keeps its project once its run was erased with
    # its corpus (webapp.erasure.models.TrainedOnErasedData), and is never taken for a base model.
    project_paths = (
        "produced_by_run__dataset__corpus__project",
        "produced_by_run__split__corpus__project",
        "erased_data__project",
    )
    shared_when = {"produced_by_run__isnull": True, "erased_data__isnull": True}
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("model version")
        verbose_name_plural = _("model versions")
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


class PeakProfileQuerySet(ProjectScopedQuerySet):
    def default_of(self, project_id: int) -> "PeakProfile | None":
        """The profile a project's pages and API use when none is named: the one marked default
        (shared), else the latest the project may use."""
        usable = self.of_project(project_id)
        return usable.filter(is_default=True).first() or usable.order_by("-created").first()


class PeakProfile(models.Model):
    """Named, versioned smoothing and threshold parameters (the paper's default: 3 / 1.0 / 0.2 / 0.4).
    A profile saved in a project is that project's (its name and versions are per project); one of
    no project is shared by every project (the paper's, made by a migration)."""

    project = models.ForeignKey(
        "projects.Project",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="peak_profiles",
        help_text=_("The project that saved it; none: shared by every project"),
        verbose_name=_("project"),
    )
    name = models.CharField(max_length=100, verbose_name=_("name"))
    version = models.PositiveIntegerField(default=1, verbose_name=_("version"))
    # defaults: the paper's, from ml.peaks.PAPER (kernel 3, sigma 1.0, lower 0.2, upper 0.4)
    kernel_size = models.PositiveSmallIntegerField(default=PAPER.kernel_size, verbose_name=_("kernel size"))
    sigma = models.FloatField(default=PAPER.sigma, verbose_name=_("sigma"))
    lower = models.FloatField(default=PAPER.lower, verbose_name=_("lower threshold"))
    upper = models.FloatField(default=PAPER.upper, verbose_name=_("upper threshold"))
    strict = models.BooleanField(
        default=False,
        help_text=_("Reference code's > for both thresholds (paper: >=)"),
        verbose_name=_("strict thresholds"),
    )
    trim = models.BooleanField(
        default=True,
        help_text=_(
            "Trim punctuation and whitespace off peak edges; drop peaks with no letter or digit "
            "(off: the reference code's peaks, for comparison)"
        ),
        verbose_name=_("trim peak edges"),
    )
    is_default = models.BooleanField(default=False, verbose_name=_("default"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, verbose_name=_("created by")
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    project_paths = ("project",)  # webapp.projects.scoping
    shared_when = {"project__isnull": True}
    objects = PeakProfileQuerySet.as_manager()

    class Meta:
        verbose_name = _("peak profile")
        verbose_name_plural = _("peak profiles")
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name", "version"],
                condition=Q(project__isnull=False),
                name="pipeline_peakprofile_name_version_per_project",
            ),
            models.UniqueConstraint(
                fields=["name", "version"], condition=Q(project__isnull=True), name="pipeline_peakprofile_name_version"
            ),
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


# ml.relevance's method labels (ml has no Django), in the reader's language; a method not listed keeps its own
METHOD_LABELS = {
    "attnlrp": "AttnLRP",
    "attention": _("Mean attention"),
    "grad_input": _("Gradient x input"),
    "integrated_gradients": _("Integrated Gradients"),
    "occlusion": _("Occlusion (by word)"),
}


class RelevanceJob(WorkUnit):
    class TaskSelection(models.TextChoices):
        ALL = "all", _("All tasks")
        LIST = "list", _("Chosen tasks")
        SAMPLE = "sample", _("Random k tasks per note")

    # One choice per registered method (ml.relevance.methods): RelevanceJob.Method.ATTNLRP, ...
    Method = models.TextChoices(
        "Method",
        [(m.name.upper(), (m.name, METHOD_LABELS.get(m.name, m.label))) for m in relevance_methods.REGISTRY.values()],
    )

    class Explain(models.TextChoices):  # ml.relevance.EXPLAIN
        NEXT = "next", _("Next token after the middle of s_T (reference code)")
        MAX = "max", _("Top logit before the middle of s_T")
        TARGET = "target", _("The middle token of s_T")
        SPAN = "span", _("Every token of s_T, summed")
        CONTRASTIVE = "contrastive", _("s_T minus a neutral description")

    corpus = models.ForeignKey(
        "corpus.Corpus", on_delete=models.PROTECT, related_name="relevance_jobs", verbose_name=_("corpus")
    )
    model_version = models.ForeignKey(
        ModelVersion, on_delete=models.PROTECT, related_name="relevance_jobs", verbose_name=_("model version")
    )
    method = models.CharField(max_length=20, choices=Method.choices, default=Method.ATTNLRP, verbose_name=_("method"))
    template = models.CharField(
        max_length=500,
        default="en",
        help_text=_("'en', 'it', 'es' or a custom template"),
        verbose_name=_("prompt template"),
    )
    explain = models.CharField(
        max_length=20, choices=Explain.choices, default=Explain.NEXT, verbose_name=_("explained target")
    )
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text=_(
            "The whole ml.relevance.RelevanceConfig (to_dict); method, template and "
            "explain are copied into their columns"
        ),
        verbose_name=_("configuration"),
    )
    config_key = models.CharField(
        max_length=64,
        blank=True,
        db_index=True,
        help_text=_("RelevanceConfig.key"),
        verbose_name=_("configuration key"),
    )
    task_selection = models.CharField(
        max_length=10, choices=TaskSelection.choices, default=TaskSelection.SAMPLE, verbose_name=_("task selection")
    )
    tasks = models.ManyToManyField("corpus.Task", blank=True, related_name="+", verbose_name=_("tasks"))
    sample_k = models.PositiveSmallIntegerField(default=9, verbose_name=_("tasks per note"))
    seed = models.IntegerField(default=0, verbose_name=_("seed"))
    note_filter = models.JSONField(
        default=dict, blank=True, help_text=_("e.g. {'ids': [...]} or {'limit': 200}"), verbose_name=_("note filter")
    )
    chunk_size = models.PositiveIntegerField(default=64, verbose_name=_("chunk size"))
    status = models.CharField(
        max_length=12, choices=JobStatus.choices, default=JobStatus.PLANNING, db_index=True, verbose_name=_("status")
    )
    total = models.PositiveIntegerField(
        default=0, help_text=_("prompts in the job (known once planned)"), verbose_name=_("prompts")
    )
    # Counters kept by the chunks as they end (one UPDATE each, never a SUM over the chunks).
    done = models.PositiveIntegerField(
        default=0, help_text=_("prompts in finished chunks"), verbose_name=_("prompts done")
    )
    chunk_count = models.PositiveIntegerField(default=0, verbose_name=_("chunks"))
    chunks_done = models.PositiveIntegerField(default=0, verbose_name=_("chunks done"))
    chunks_failed = models.PositiveIntegerField(default=0, verbose_name=_("chunks failed"))
    chunks_cancelled = models.PositiveIntegerField(default=0, verbose_name=_("chunks cancelled"))
    seconds_done = models.FloatField(
        default=0.0, help_text=_("seconds of computing of the finished chunks"), verbose_name=_("computing seconds")
    )
    lacking = models.JSONField(
        default=dict,
        blank=True,
        help_text=_(
            "workers that could not load the job's model: {worker: {model, reason, releases, at}} "
            "(webapp.pipeline.chunks.release_unloadable)"
        ),
        verbose_name=_("workers lacking the model"),
    )
    # Planning (by a worker, never in the web request): notes read so far of notes_total.
    notes_total = models.PositiveIntegerField(default=0, verbose_name=_("notes to plan"))
    notes_planned = models.PositiveIntegerField(default=0, verbose_name=_("notes planned"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, verbose_name=_("created by")
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    project_paths = ("corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("relevance job")
        verbose_name_plural = _("relevance jobs")
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="pipeline_relevancejob_done_le_total"),
            models.CheckConstraint(condition=Q(chunk_size__gte=1), name="pipeline_relevancejob_chunk_positive"),
        ]

    def __str__(self):
        return gettext("relevance job %(job)s (%(status)s)") % {"job": self.pk, "status": choice_word(self, "status")}

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

    job = models.ForeignKey(
        RelevanceJob, on_delete=models.CASCADE, related_name="chunks", verbose_name=_("relevance job")
    )
    index = models.PositiveIntegerField(verbose_name=_("index"))
    pairs = models.JSONField(verbose_name=_("pairs"))
    size = models.PositiveIntegerField(verbose_name=_("prompts"))
    status = models.CharField(
        max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED, verbose_name=_("status")
    )
    seconds = models.FloatField(null=True, blank=True, verbose_name=_("seconds"))
    # attempts only grow (a worker writes only while the number is its own); Resume records where
    # the chunk's new series of attempts starts, for the give-up rule (chunks.MAX_ATTEMPTS)
    attempts_before_resume = models.PositiveSmallIntegerField(default=0, verbose_name=_("attempts before resuming"))
    # releases by workers that could not load the model since the last Resume: {worker: count}
    # (chunks.release_unloadable; a released attempt does not count toward MAX_ATTEMPTS)
    releases = models.JSONField(default=dict, blank=True, verbose_name=_("releases"))

    class Meta:
        verbose_name = _("relevance job chunk")
        verbose_name_plural = _("relevance job chunks")
        ordering = ["job", "index"]
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="pipeline_chunk_job_index")]
        indexes = [
            models.Index(fields=["job", "status"], name="pipeline_chunk_job_status"),
            models.Index(fields=["status", "heartbeat"], name="pipeline_chunk_sweep"),
            # the job page lists the first chunks with a message: a small index, not a scan of the job
            models.Index(fields=["job", "index"], condition=~Q(error=""), name="pipeline_chunk_errors"),
        ]

    def __str__(self):
        return gettext("job %(job)s chunk %(chunk)s (%(status)s)") % {
            "job": self.job_id,
            "chunk": self.index,
            "status": choice_word(self, "status"),
        }


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


class MapConfiguration(models.Model):
    """One relevance configuration maps were made with: method, template and RelevanceConfig.key,
    stored once and referenced by a small integer from every map (not repeated on each row)."""

    id = models.AutoField(primary_key=True)
    method = models.CharField(max_length=20)
    template = models.CharField(max_length=500)
    config_key = models.CharField(max_length=64, help_text="RelevanceConfig.key")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["config_key", "method", "template"], name="pipeline_mapconfig_unique"),
        ]

    def __str__(self):
        return f"{self.method} / {self.template[:20]} / {self.config_key[:12]}"

    @classmethod
    def id_of(cls, method: str, template: str, config_key: str = "") -> int:
        """The id of this configuration's row, made if missing (safe under concurrent writers)."""
        config_key = config_key or default_config_key(method, template)
        known = cls.objects.filter(method=method, template=template, config_key=config_key).values_list("pk", flat=True)
        if (pk := known.first()) is not None:
            return pk
        cls.objects.bulk_create([cls(method=method, template=template, config_key=config_key)], ignore_conflicts=True)
        analyze(cls)  # too small a table for autovacuum ever to analyze it (webapp.db.planner_stats)
        return known.get()


class NoteTokens(models.Model):
    """A note's token offsets (ml.codec.encode_offsets), stored once for every map of the note
    tokenized alike: maps of different tasks, model versions (sharing a tokenizer) and
    configurations reference one row. Content-addressed: (note, digest of the offsets)."""

    id = models.AutoField(primary_key=True)
    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="+", db_index=False)
    digest = models.BinaryField(max_length=16)
    offsets = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["note", "digest"], name="pipeline_notetokens_unique")]

    @classmethod
    def ids(cls, offsets_by_note: dict) -> dict:
        """{(note_id, digest): id} of `offsets_by_note` ({(note_id, digest): blob}), the missing
        rows inserted first in one statement (INSERT ... ON CONFLICT DO NOTHING)."""
        if not offsets_by_note:
            return {}
        cls.objects.bulk_create(
            [cls(note_id=n, digest=d, offsets=blob) for (n, d), blob in offsets_by_note.items()],
            ignore_conflicts=True,
        )
        rows = cls.objects.filter(note_id__in={n for n, _ in offsets_by_note}).values_list("pk", "note_id", "digest")
        found = {(n, bytes(d)): pk for pk, n, d in rows}
        return {key: found[key] for key in offsets_by_note}


# The key of a map: one per note, task, model version and relevance configuration.
MAP_KEY = ["note", "task", "model_version", "config"]


@dataclass(frozen=True)
class StoredArrays:
    """What `store` reads of a computed map (ml.relevance.RelevanceResult has the same fields)."""

    offsets: np.ndarray
    scores: np.ndarray
    target_token: str = ""


class _ArraysIterable(ValuesListIterable):
    """values_list rows whose last two columns (scores, offsets) become one (offsets, scores)."""

    def __iter__(self):
        for row in super().__iter__():
            yield (*row[:-2], decode_arrays(row[-1], row[-2]))


class RelevanceMapQuerySet(ProjectScopedQuerySet):
    def for_config(self, method: str, template: str, config_key: str = "", *, jobs=()) -> "RelevanceMapQuerySet":
        """Maps made by ONE relevance configuration of this method and template, so that two
        configurations never mix in a comparison, a review page or a dataset.

        config_key: a RelevanceConfig.key. Empty: the configuration of `jobs` (ids or jobs;
        ValueError if they differ), or without jobs the DEFAULT configuration of the method and
        template (explain "next", normalise "abs", truncate "right", dtype "auto"), which is
        what every map stored before configurations were recorded was made with."""
        return self.filter(
            config__method=method,
            config__template=template,
            config__config_key=resolve_config_key(method, template, config_key, jobs=jobs),
        )

    def with_arrays(self, *fields: str) -> "RelevanceMapQuerySet":
        """Rows of `fields` followed by the map's (offsets, scores), scores and offsets read in
        the same query (a join to the note's offsets). Still a QuerySet: filter, order, slice."""
        rows = self.values_list(*fields, "data", "tokens__offsets")
        rows._iterable_class = _ArraysIterable
        return rows

    def store(
        self, computed, *, model_version_id: int, method: str, template: str, config_key: str, job_id: int | None = None
    ) -> int:
        """Upsert one map per ((note_id, task_id), RelevanceResult) of `computed`, keyed by
        (note, task, model version, configuration): a batch stored twice writes nothing twice, and
        a map computed again replaces the earlier one. The offsets go to the note's NoteTokens row
        (made if missing), the map keeps its float16 scores. Returns the count."""
        computed = list(computed)
        if not computed:
            return 0
        if any(len(result.offsets) != len(result.scores) for _, result in computed):
            raise ValueError("a map has not as many scores as token offsets")
        config_id = MapConfiguration.id_of(method, template, config_key)
        blobs = [encode_offsets(result.offsets) for _, result in computed]
        keys = [(note_id, offsets_digest(blob)) for ((note_id, _), _), blob in zip(computed, blobs)]
        tokens = NoteTokens.ids(dict(zip(keys, blobs)))
        maps = [
            RelevanceMap(
                note_id=note_id,
                task_id=task_id,
                model_version_id=model_version_id,
                config_id=config_id,
                tokens_id=tokens[key],
                job_id=job_id,
                n_tokens=len(result.scores),
                target_token=result.target_token[:100],
                data=encode_scores(result.scores),
            )
            for ((note_id, task_id), result), key in zip(computed, keys)
        ]
        updated = ["tokens", "n_tokens", "target_token", "data"] + (["job"] if job_id is not None else [])
        self.bulk_create(maps, update_conflicts=True, unique_fields=MAP_KEY, update_fields=updated)
        return len(maps)

    def store_one(
        self, note, task, model_version, offsets, scores, *, method="attnlrp", template="en", config_key="", job=None
    ) -> "RelevanceMap":
        """`store` of one map given as arrays (fabricated maps of tests and benchmarks); returns it."""
        result = StoredArrays(np.asarray(offsets, np.int32).reshape(-1, 2), np.asarray(scores, np.float32))
        pk = lambda obj: getattr(obj, "pk", obj)  # noqa: E731
        self.store(
            [((pk(note), pk(task)), result)],
            model_version_id=pk(model_version),
            method=method,
            template=template,
            config_key=config_key or default_config_key(method, template),
            job_id=pk(job),
        )
        return self.get(
            note_id=pk(note),
            task_id=pk(task),
            model_version_id=pk(model_version),
            config__config_key=config_key or default_config_key(method, template),
        )

    def fill_notes(
        self, notes, *, task_id: int, model_version_id: int, method: str, template: str, offsets, scores
    ) -> None:
        """Give every note of the `notes` queryset the same map (default configuration of the
        method and template) in two statements on the server: a fabricator of large test,
        benchmark and drill corpora, which `store` would feed one batch at a time."""
        config_id = MapConfiguration.id_of(method, template)
        blob = encode_offsets(offsets)
        digest = offsets_digest(blob)
        note_ids, params = notes.values("pk").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {NoteTokens._meta.db_table} (note_id, digest, offsets) "
                f"SELECT id, %s, %s FROM ({note_ids}) AS n(id) ON CONFLICT DO NOTHING",
                [digest, blob, *params],
            )
            cursor.execute(
                f"INSERT INTO {RelevanceMap._meta.db_table} "
                "(note_id, task_id, model_version_id, config_id, tokens_id, n_tokens, target_token, data) "
                f"SELECT note_id, %s, %s, %s, id, %s, '', %s FROM {NoteTokens._meta.db_table} "
                f"WHERE digest = %s AND note_id IN ({note_ids}) ON CONFLICT DO NOTHING",
                [task_id, model_version_id, config_id, len(scores), encode_scores(scores), digest, *params],
            )


class RelevanceMap(models.Model):
    """Relevance of every note token for one task, by one model version and relevance configuration.

    `config` is the MapConfiguration (method, template, RelevanceConfig.key) of the job that made
    it; `tokens` the note's token offsets, shared with the note's other maps tokenized alike;
    `data` the scores alone, float16 (ml.codec.encode_scores). Read both with
    `RelevanceMap.objects.with_arrays(...)` (one query). About 2.9 bytes a token all-in for a note
    with 9 maps of 300 tokens (benchmarks/map_storage.py).
    Indexes: the unique key (note first: a note's maps, or notes by id), the primary key, and
    the foreign keys a delete looks through (job, tokens); task, model version and
    configuration are never deleted while maps use them (PROTECT) and go unindexed."""

    note = models.ForeignKey(
        "corpus.Note", on_delete=models.CASCADE, related_name="relevance_maps", db_index=False, verbose_name=_("note")
    )
    task = models.ForeignKey(
        "corpus.Task", on_delete=models.PROTECT, related_name="relevance_maps", db_index=False, verbose_name=_("task")
    )
    model_version = models.ForeignKey(
        ModelVersion,
        on_delete=models.PROTECT,
        related_name="relevance_maps",
        db_index=False,
        verbose_name=_("model version"),
    )
    config = models.ForeignKey(
        MapConfiguration, on_delete=models.PROTECT, related_name="maps", db_index=False, verbose_name=_("configuration")
    )
    job = models.ForeignKey(
        RelevanceJob,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="maps",
        verbose_name=_("relevance job"),
    )
    tokens = models.ForeignKey(
        NoteTokens, on_delete=models.CASCADE, related_name="maps", verbose_name=_("token offsets")
    )
    n_tokens = models.PositiveIntegerField(verbose_name=_("tokens"))
    target_token = models.CharField(max_length=100, blank=True, verbose_name=_("target token"))
    data = models.BinaryField(help_text=_("float16 scores (ml.codec.encode_scores)"), verbose_name=_("scores"))

    objects = RelevanceMapQuerySet.as_manager()

    project_paths = ("note__corpus__project",)  # webapp.projects.scoping

    class Meta:
        verbose_name = _("relevance map")
        verbose_name_plural = _("relevance maps")
        constraints = [
            models.UniqueConstraint(fields=MAP_KEY, name="pipeline_relevancemap_unique_config"),
        ]

    def __str__(self):
        return gettext("map note=%(note)s task=%(task)s model=%(model)s config=%(config)s") % {
            "note": self.note_id,
            "task": self.task_id,
            "model": self.model_version_id,
            "config": self.config_id,
        }

    @property
    def method(self) -> str:
        return self.config.method

    @property
    def template(self) -> str:
        return self.config.template

    @property
    def config_key(self) -> str:
        return self.config.config_key

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets int32 (n, 2), scores float32 (n,)); select_related("tokens") saves a query."""
        return decode_arrays(self.tokens.offsets, self.data)


class MapImport(models.Model):
    """One file of relevance maps computed outside the product, imported into a model version's
    maps (webapp.pipeline.mapimport): its maps are stored under a configuration whose method is
    "imported" (ml.relevance.IMPORTED), so every page and evaluation names their origin. The
    file's SHA-256 makes a second import of the same file a no-op."""

    corpus = models.ForeignKey(
        "corpus.Corpus", on_delete=models.CASCADE, related_name="map_imports", verbose_name=_("corpus")
    )
    model_version = models.ForeignKey(
        ModelVersion, on_delete=models.PROTECT, related_name="map_imports", verbose_name=_("model version")
    )
    config = models.JSONField(
        help_text=_("The ml.relevance.RelevanceConfig (method 'imported') its maps are stored under"),
        verbose_name=_("configuration"),
    )
    config_key = models.CharField(
        max_length=64, db_index=True, help_text=_("RelevanceConfig.key"), verbose_name=_("configuration key")
    )
    source = models.CharField(
        max_length=200, blank=True, help_text=_("Where the maps come from, e.g. 'captum IG'"), verbose_name=_("source")
    )
    file_name = models.CharField(max_length=255, blank=True, verbose_name=_("file name"))
    digest = models.CharField(
        max_length=64, help_text=_("SHA-256 of the file (hex)"), verbose_name=_("SHA-256 of the file")
    )
    lines = models.PositiveIntegerField(default=0, verbose_name=_("lines"))
    maps = models.PositiveIntegerField(default=0, verbose_name=_("maps"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, verbose_name=_("created by")
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    project_paths = ("corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("relevance map import")
        verbose_name_plural = _("relevance map imports")
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["corpus", "model_version", "config_key", "digest"], name="pipeline_mapimport_file_once"
            ),
        ]

    def __str__(self):
        # English keeps "(1 maps)" as it always read; the catalogs give each language its forms
        return ngettext("map import %(import)s (%(maps)s maps)", "map import %(import)s (%(maps)s maps)", self.maps) % {
            "import": self.pk,
            "maps": self.maps,
        }


class MapImportJob(WorkUnit):
    """An uploaded file of relevance maps imported by a worker (kind "map import",
    webapp.pipeline.mapimport_jobs): the file is stored on upload (webapp.corpus.uploads), checked
    whole by the worker, then written with its MapImport row in one transaction, in which the job
    ends too. A refused file's `problems` are [line or None, reason] pairs (never note text)."""

    class Phase(models.TextChoices):
        VALIDATING = "validating", _("checking every line")
        WRITING = "writing", _("writing the maps")

    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.CASCADE, related_name="map_import_jobs")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="map_import_jobs")
    template = models.CharField(max_length=20, default="en")
    explain = models.CharField(max_length=20, default="next")
    source = models.CharField(max_length=200, blank=True, help_text="Where the maps come from, e.g. 'captum IG'")
    replace = models.BooleanField(default=False, help_text="replace maps of pairs imported before")
    upload = models.CharField(
        max_length=500, blank=True, help_text="the stored file (webapp.corpus.uploads); empty once ended"
    )
    file_name = models.CharField(max_length=255, blank=True)
    file_size = models.BigIntegerField(default=0)
    phase = models.CharField(max_length=12, choices=Phase.choices, blank=True)
    lines_done = models.PositiveIntegerField(default=0)
    problems = models.JSONField(default=list, blank=True, help_text="[[line or null, reason], ...] of a refused file")
    problem_count = models.PositiveIntegerField(default=0)
    map_import = models.ForeignKey(MapImport, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    imported_before = models.BooleanField(default=False, help_text="the same file was imported before: nothing written")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)

    project_paths = ("corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return gettext("map import job %(job)s") % {"job": self.pk}
