"""Masked datasets: versioned sets of DSM training examples with their provenance."""
from django.conf import settings
from django.db import models
from django.db.models import F, Q

from webapp.pipeline.models import JobStatus


class DatasetVersion(models.Model):
    """Built from relevance maps x a peak profile x filters (x review decisions, once reviews exist)."""

    class Mode(models.TextChoices):
        DSM = "dsm", "DecSelfMask (peaks masked)"
        RANDOM = "random", "Random mask (ablation)"
        ONE_PEAK = "one_peak", "One peak only (ablation)"
        UNMASKED = "unmasked", "Unmasked notes (continual pretraining)"

    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=1)
    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.PROTECT, related_name="datasets")
    model_version = models.ForeignKey("pipeline.ModelVersion", on_delete=models.PROTECT, related_name="datasets")
    method = models.CharField(max_length=20, default="attnlrp")
    template = models.CharField(max_length=500, default="en")
    profile = models.ForeignKey("pipeline.PeakProfile", on_delete=models.PROTECT, related_name="datasets")
    jobs = models.ManyToManyField("pipeline.RelevanceJob", blank=True, related_name="datasets")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.DSM)
    mask_token = models.CharField(max_length=50, default="<mask>")
    seed = models.IntegerField(default=0)
    filters = models.JSONField(default=dict, blank=True, help_text="e.g. {'tasks': [...], 'exclude_held_out': true}")
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    stats = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="datasets_datasetversion_name_version"),
            models.CheckConstraint(condition=~Q(name=""), name="datasets_datasetversion_name_not_blank"),
        ]

    def __str__(self):
        return f"{self.name} v{self.version}"


class MaskedExample(models.Model):
    """One training example: a note with one peak group masked, the masked text as the label."""

    dataset = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="examples")
    note = models.ForeignKey("corpus.Note", on_delete=models.PROTECT, related_name="+")
    tasks = models.JSONField(help_text="ids of the tasks whose peaks produced this example (after de-duplication)")
    relevance_map = models.ForeignKey("pipeline.RelevanceMap", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+", help_text="the first map that produced it")
    masked_text = models.TextField()
    label = models.TextField(blank=True)
    char_start = models.PositiveIntegerField()
    char_end = models.PositiveIntegerField()

    class Meta:
        ordering = ["dataset", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(char_start__lte=F("char_end")), name="datasets_example_span_ordered"),
        ]
        indexes = [models.Index(fields=["dataset", "id"], name="datasets_example_page")]

    def __str__(self):
        return f"example {self.pk} of dataset {self.dataset_id}"
