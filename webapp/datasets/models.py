"""Masked datasets: versioned sets of DSM training examples with their provenance.

A DatasetVersion names its inputs (corpus, model version, method, template, optionally the
relevance jobs, a peak profile, a mode and filters); `webapp.datasets.building` turns the
stored relevance maps they select into MaskedExample rows. A version is a frozen snapshot:
each example stores its masked text and label, so editing a note later does not change a
dataset that was already built (or exported, or trained on). A finished version is never
rebuilt in place from the pages: "build again" makes version + 1 with the same settings.

A build and an export are units of long work (webapp.lifecycle.WorkUnit): status, the worker
that holds them, its heartbeat, attempts, started/finished and the error in plain words.

`filters` (all keys optional):
    {"tasks": [task ids]           -- only these tasks (default: every task with maps),
     "exclude_held_out": true,     -- default true: held-out tasks (Task.held_out) never used,
     "notes": [note ids]}          -- only these notes of the corpus
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Max, Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.relevance import default_config_key
from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import choice_word
from webapp.pipeline.models import MapConfiguration, MixedConfigurations, RelevanceMap, resolve_config_key
from webapp.projects.scoping import ProjectScopedQuerySet


class BuildError(Exception):
    """A problem the user can understand and fix; the message is shown as written."""


class DatasetVersion(WorkUnit):
    """Built from relevance maps x a peak profile x filters (x review decisions, once reviews exist)."""

    class Mode(models.TextChoices):
        DSM = "dsm", gettext_lazy("DecSelfMask (peaks masked)")
        RANDOM = "random", gettext_lazy("Random mask (ablation)")
        ONE_PEAK = "one_peak", gettext_lazy("One peak only (ablation)")
        UNMASKED = "unmasked", gettext_lazy("Unmasked notes (continual pretraining)")

    name = models.CharField(max_length=200, verbose_name=gettext_lazy("name"))
    version = models.PositiveIntegerField(default=1, verbose_name=gettext_lazy("version"))
    corpus = models.ForeignKey(
        "corpus.Corpus", on_delete=models.PROTECT, related_name="datasets", verbose_name=gettext_lazy("corpus")
    )
    model_version = models.ForeignKey(
        "pipeline.ModelVersion",
        on_delete=models.PROTECT,
        related_name="datasets",
        verbose_name=gettext_lazy("model version"),
    )
    method = models.CharField(max_length=20, default="attnlrp", verbose_name=gettext_lazy("method"))
    template = models.CharField(max_length=500, default="en", verbose_name=gettext_lazy("prompt template"))
    profile = models.ForeignKey(
        "pipeline.PeakProfile",
        on_delete=models.PROTECT,
        related_name="datasets",
        verbose_name=gettext_lazy("peak profile"),
    )
    # No jobs: every map of its choices, which must come from one relevance configuration
    # (config_key_of, below).
    jobs = models.ManyToManyField(
        "pipeline.RelevanceJob",
        blank=True,
        related_name="datasets",
        help_text=gettext_lazy("Only maps written by these jobs (none: every matching map)"),
        verbose_name=gettext_lazy("relevance jobs"),
    )
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.DSM, verbose_name=gettext_lazy("mode"))
    mask_token = models.CharField(max_length=50, default="<mask>", verbose_name=gettext_lazy("mask token"))
    seed = models.IntegerField(default=0, verbose_name=gettext_lazy("seed"))
    filters = models.JSONField(
        default=dict,
        blank=True,
        help_text=gettext_lazy("{'tasks': [ids], 'exclude_held_out': true, 'notes': [ids]}, all optional"),
        verbose_name=gettext_lazy("filters"),
    )
    maps_total = models.PositiveIntegerField(
        default=0,
        help_text=gettext_lazy("relevance maps selected (known once running)"),
        verbose_name=gettext_lazy("maps selected"),
    )
    maps_done = models.PositiveIntegerField(
        default=0, help_text=gettext_lazy("relevance maps processed so far"), verbose_name=gettext_lazy("maps done")
    )
    stats = models.JSONField(default=dict, blank=True, verbose_name=gettext_lazy("statistics"))
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
        verbose_name = gettext_lazy("masked dataset")
        verbose_name_plural = gettext_lazy("masked datasets")
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="datasets_datasetversion_name_version"),
            models.CheckConstraint(condition=~Q(name=""), name="datasets_datasetversion_name_not_blank"),
            models.CheckConstraint(condition=~Q(mask_token=""), name="datasets_datasetversion_mask_not_blank"),
        ]

    def __str__(self):
        return f"{self.name} v{self.version}"

    @property
    def config_key(self) -> str:
        """The relevance configuration of the maps it is (or was) built from: as its build recorded
        it, else its jobs', else the one configuration with maps for its choices (BuildError if
        several: config_key_of)."""
        if self.stats.get("config_key"):
            return self.stats["config_key"]
        return dataset_config_key(self)

    @property
    def progress_percent(self) -> int:
        """Of the maps read; at most 99 until the build has ended (the last examples and the
        statistics are written after the last map)."""
        if not self.maps_total:
            return 0
        share = min(100, round(100 * self.maps_done / self.maps_total))
        return min(share, 99) if self.is_active else share

    @property
    def example_count(self) -> int:
        return int(self.stats.get("examples", 0))

    @classmethod
    def next_version(cls, name: str) -> int:
        return (cls.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0) + 1


def config_key_of(corpus_id, model_version_id, method: str, template: str, job_ids=()) -> str:
    """The ONE relevance configuration a dataset's maps come from, so a build is never ambiguous:
    that of its jobs (BuildError if they differ); with no jobs, the configuration that has maps of
    this corpus, model version, method and template (BuildError naming them if several have: the
    jobs of one must be chosen); the default one when none has."""
    if job_ids:
        try:
            return resolve_config_key(method, template, jobs=job_ids)
        except MixedConfigurations as exc:
            raise BuildError(f"{exc}.") from None
    configs = list(MapConfiguration.objects.filter(method=method, template=template).values_list("pk", "config_key"))
    if len(configs) > 1:  # rare: only then look for which of them have maps here
        maps = RelevanceMap.objects.filter(model_version_id=model_version_id, note__corpus_id=corpus_id)
        configs = [(pk, key) for pk, key in configs if maps.filter(config_id=pk).exists()]
    if len(configs) > 1:
        names = ", ".join(sorted(key for _, key in configs))
        raise BuildError(
            _(
                "Maps of %(count)s relevance configurations match these choices (%(names)s): choose the relevance "
                "jobs of the one to build from (e.g. the configuration an evaluation recommends)."
            )
            % {"count": len(configs), "names": names}
        )
    return configs[0][1] if configs else default_config_key(method, template)


def dataset_config_key(dataset: DatasetVersion) -> str:
    """The relevance configuration a dataset is built from (see `config_key_of`)."""
    job_ids = list(dataset.jobs.values_list("pk", flat=True))
    return config_key_of(dataset.corpus_id, dataset.model_version_id, dataset.method, dataset.template, job_ids)


class MaskedExample(models.Model):
    """One training example: a note with one peak group masked, the masked text as the label.

    Provenance: the note, the tasks whose peaks produced it, the first relevance map that did,
    the masked character span (null for an unmasked example) and, through the dataset, the peak
    profile, mode, mask token and seed."""

    dataset = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="examples")
    note = models.ForeignKey("corpus.Note", on_delete=models.PROTECT, related_name="+")
    tasks = models.JSONField(help_text="ids of the tasks whose peaks produced this example (after de-duplication)")
    relevance_map = models.ForeignKey(
        "pipeline.RelevanceMap",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the first map that produced it",
    )
    masked_text = models.TextField()
    label = models.TextField(blank=True)
    char_start = models.PositiveIntegerField(null=True, blank=True, help_text="null for an unmasked example")
    char_end = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["dataset", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(char_start__lte=F("char_end")), name="datasets_example_span_ordered"),
            models.CheckConstraint(
                condition=Q(char_start__isnull=True, char_end__isnull=True)
                | Q(char_start__isnull=False, char_end__isnull=False),
                name="datasets_example_span_both_or_neither",
            ),
        ]
        indexes = [models.Index(fields=["dataset", "id"], name="datasets_example_page")]

    def __str__(self):
        return _("example %(example)s of dataset %(dataset)s") % {"example": self.pk, "dataset": self.dataset_id}


def export_formats() -> list[tuple[str, str]]:
    """The export formats, (name, label), from their table (webapp.datasets.formats), read when the
    choices are asked for: a new writer needs no migration."""
    from webapp.datasets.formats import choices

    return choices()


class DatasetExport(WorkUnit):
    """An export written to a folder under DATA_DIR/exports by a worker. `rows` counts the rows
    written so far while it runs, all of them once done."""

    dataset = models.ForeignKey(
        DatasetVersion, on_delete=models.CASCADE, related_name="exports", verbose_name=gettext_lazy("dataset")
    )
    format = models.CharField(max_length=10, choices=export_formats, verbose_name=gettext_lazy("format"))
    path = models.CharField(
        max_length=1000,
        blank=True,
        help_text=gettext_lazy("the export folder, relative to DATA_DIR"),
        verbose_name=gettext_lazy("path"),
    )
    rows = models.PositiveIntegerField(null=True, blank=True, verbose_name=gettext_lazy("rows"))
    size_bytes = models.PositiveBigIntegerField(null=True, blank=True, verbose_name=gettext_lazy("size (bytes)"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name=gettext_lazy("created by"),
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=gettext_lazy("created"))
    expired = models.DateTimeField(
        null=True,
        blank=True,
        help_text=gettext_lazy("when retention removed its files"),
        verbose_name=gettext_lazy("expired"),
    )
    residual = models.JSONField(
        null=True,
        blank=True,
        help_text=gettext_lazy(
            "the residual scan of the rows written: findings per identifier type, never values "
            "(webapp.deid_ops.scanning.ExportScan)"
        ),
        verbose_name=gettext_lazy("residual identifiers"),
    )

    project_paths = ("dataset__corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = gettext_lazy("dataset export")
        verbose_name_plural = gettext_lazy("dataset exports")
        ordering = ["-created"]

    def __str__(self):
        return _("%(format)s export %(export)s of dataset %(dataset)s (%(status)s)") % {
            "format": self.get_format_display(),
            "export": self.pk,
            "dataset": self.dataset_id,
            "status": choice_word(self, "status"),
        }
