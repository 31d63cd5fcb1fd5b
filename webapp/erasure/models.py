"""An erasure request and the marks it leaves.

ErasureRequest is a unit of long work (webapp.lifecycle.WorkUnit). Its target is resolved once,
when it is made, to ids only (`target`: the project, the corpus, the notes, the dataset versions
that hold examples of them, the trained models that saw them), so a resumed erasure deletes
exactly what was asked even though half of it is gone already. A patient's value is never
stored: `patient_hashes` holds a keyed hash of each (webapp.deid.policy.patient_hash). `planned` is the dry
run's count per table when the request was made; `erased` the rows deleted so far, written in
the same transaction as each batch it counts.

DatasetWithdrawal marks a dataset version whose examples were removed because some came from
erased notes; TrainedOnErasedData marks a trained model whose training data held erased notes.
The model stays (its weights are not touched, nothing is unlearnt): it is listed, and keeps the
project it belonged to even once the run that produced it is gone (ModelVersion.project_paths).
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import choice_word
from webapp.projects.scoping import ProjectScopedQuerySet


class ErasureRequest(WorkUnit):
    class Scope(models.TextChoices):
        NOTES = "notes", _("Notes, by id")
        PATIENT = "patient", _("Every note of a patient")
        CORPUS = "corpus", _("A whole corpus")
        PROJECT = "project", _("A whole project")

    class Datasets(models.TextChoices):
        WITHDRAW = "withdraw", _("Withdraw them: their examples and exported files are removed")
        REBUILD = "rebuild", _("Withdraw them and build a new version without the erased notes")

    scope = models.CharField(max_length=10, choices=Scope.choices)
    project = models.ForeignKey("projects.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    project_slug = models.CharField(max_length=100, help_text="kept once a whole project is erased")
    corpus_name = models.CharField(max_length=200, blank=True)
    described = models.CharField(max_length=300, help_text="the target in words, without a note's or patient's id")
    target = models.JSONField(default=dict, help_text="ids resolved when requested (planning.Target)")
    patient_key = models.CharField(max_length=100, blank=True, help_text="the notes' metadata key naming the patient")
    patient_hashes = models.JSONField(default=list, blank=True, help_text="keyed hashes of the patients' values")
    datasets = models.CharField(max_length=10, choices=Datasets.choices, default=Datasets.WITHDRAW)
    planned = models.JSONField(default=dict, blank=True, help_text="rows per table when requested (the dry run)")
    erased = models.JSONField(default=dict, blank=True, help_text="rows per table deleted so far")
    step = models.CharField(max_length=100, blank=True, help_text="the table being erased now")
    rebuilt = models.JSONField(default=list, blank=True, help_text="[[withdrawn version id, its new version id], ...]")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by_name = models.CharField(max_length=150)
    created = models.DateTimeField(auto_now_add=True)

    project_paths = ("project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return gettext("erasure %(erasure)s (%(status)s)") % {"erasure": self.pk, "status": choice_word(self, "status")}

    @property
    def rows_planned(self) -> int:
        return sum(self.planned.get("tables", {}).values())

    @property
    def rows_erased(self) -> int:
        return sum(self.tables_erased.values())

    @property
    def tables_erased(self) -> dict[str, int]:
        """Rows deleted per table, by table name (PostgreSQL's jsonb keeps no order)."""
        return {table: rows for table, rows in sorted(self.erased.items()) if not table.startswith("files: ")}

    @property
    def files_erased(self) -> dict[str, int]:
        return {k.removeprefix("files: "): n for k, n in sorted(self.erased.items()) if k.startswith("files: ")}

    @property
    def withdrawn_names(self) -> list[str]:
        return self.planned.get("datasets withdrawn", [])

    @property
    def models_listed_names(self) -> list[str]:
        return self.planned.get("models trained on erased data", [])

    @property
    def percent(self) -> int:
        """Of the rows planned; at most 99 until the erasure has ended (after the last row come the
        note ids forgotten, the rebuilds and the receipt)."""
        planned = self.rows_planned
        share = min(100, round(100 * self.rows_erased / planned)) if planned else (100 if self.is_done else 0)
        return min(share, 99) if self.is_active else share


class DatasetWithdrawal(models.Model):
    """A dataset version that held examples of erased notes: its examples and files are gone,
    the row stays as the history of what was built and trained on."""

    dataset = models.OneToOneField("datasets.DatasetVersion", on_delete=models.CASCADE, related_name="withdrawal")
    erasure = models.ForeignKey(ErasureRequest, on_delete=models.PROTECT, related_name="withdrawals")
    withdrawn = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return gettext("dataset %(dataset)s withdrawn by erasure %(erasure)s") % {
            "dataset": self.dataset_id,
            "erasure": self.erasure_id,
        }


class TrainedOnErasedData(models.Model):
    """A trained model whose training data held notes that were erased later. One row per model;
    `erasures` lists every erasure that reached it."""

    model_version = models.OneToOneField("pipeline.ModelVersion", on_delete=models.CASCADE, related_name="erased_data")
    project = models.ForeignKey("projects.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    erasures = models.ManyToManyField(ErasureRequest, related_name="models_listed")
    listed = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = _("models trained on erased data")

    def __str__(self):
        return gettext("model %(model)s trained on erased data") % {"model": self.model_version_id}
