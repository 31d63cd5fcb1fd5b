"""A project's de-identification policy, the long work that applies it, and kept mappings.

DeidPolicy says what the project's notes are de-identified with (ml.deid.DeidConfig plus how
identifiers are replaced). DeidJob is a unit of long work (webapp.lifecycle.WorkUnit): either
de-identify a corpus into a new corpus, or scan a corpus for identifiers left (a residual
scan); `counts` holds findings per identifier type, never a value. SurrogateMapping keeps, when
the policy asks for it, one patient's original -> surrogate pairs encrypted with the key from
the environment (DEID_MAPPING_KEY); it never leaves with an export and is never logged.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import choice_word
from webapp.projects.scoping import ProjectScopedQuerySet


class DeidPolicy(models.Model):
    class Mode(models.TextChoices):
        TAGS = "tags", _("Category tags ([NAME], [DATE])")
        SURROGATES = "surrogates", _("Surrogates: one stand-in per patient, dates shifted per patient")

    project = models.OneToOneField("projects.Project", on_delete=models.CASCADE, related_name="deid_policy")
    # Surrogates by default: they keep the relevance maps the method learns from (Spearman 0.97
    # against the original text, tags 0.84: docs/benchmarks/deid.json) and hide a missed
    # identifier among stand-ins; tags for a release that must show what was replaced.
    mode = models.CharField(max_length=12, choices=Mode.choices, default=Mode.SURROGATES)
    patient_field = models.CharField(
        max_length=100,
        blank=True,
        help_text=_("The notes' metadata key naming the patient: surrogates and date shifts are kept per patient"),
    )
    known_fields = models.JSONField(
        default=list,
        blank=True,
        help_text=_("Metadata keys whose values are identifiers (patient name, record number)"),
    )
    record_patterns = models.JSONField(
        default=list, blank=True, help_text=_("Regular expressions of the project's record or accession numbers")
    )
    allow_list = models.JSONField(default=list, blank=True, help_text=_("Words never replaced (eponyms, drug names)"))
    deny_list = models.JSONField(default=list, blank=True, help_text=_("Words always replaced (the ward's own)"))
    keep_mapping = models.BooleanField(
        default=False, help_text=_("Keep the original -> surrogate pairs, encrypted with DEID_MAPPING_KEY")
    )
    ner_model_dir = models.CharField(
        max_length=500, blank=True, help_text=_("A local spaCy or transformers model folder on the workers (optional)")
    )
    updated = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    project_paths = ("project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    def __str__(self):
        return gettext("de-identification policy of project %(project)s") % {"project": self.project_id}


class DeidJob(WorkUnit):
    class Action(models.TextChoices):
        DEIDENTIFY = "deidentify", _("De-identify into a new corpus")
        SCAN = "scan", _("Residual scan")

    action = models.CharField(max_length=12, choices=Action.choices)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="deid_jobs")
    source = models.ForeignKey(
        "corpus.Corpus", null=True, blank=True, on_delete=models.SET_NULL, related_name="deid_jobs"
    )
    target = models.ForeignKey(
        "corpus.Corpus",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="deid_sources",
        help_text=_("The de-identified corpus made (action deidentify)"),
    )
    target_name = models.CharField(max_length=200, blank=True)
    notes_done = models.PositiveBigIntegerField(default=0)
    last_note = models.PositiveBigIntegerField(
        default=0, help_text="the source note (by id) the last committed batch ended with; Resume goes on after it"
    )
    notes_total = models.PositiveBigIntegerField(default=0)
    notes_with_findings = models.PositiveBigIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True, help_text="findings per identifier type, never values")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    project_paths = ("project",)
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return gettext("%(action)s %(job)s (%(status)s)") % {
            "action": self.action,
            "job": self.pk,
            "status": choice_word(self, "status"),
        }


class SurrogateMapping(models.Model):
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    patient_hash = models.CharField(max_length=64, help_text="keyed hash of the patient's value, never the value")
    ciphertext = models.BinaryField(help_text="Fernet token of the JSON pairs, key DEID_MAPPING_KEY")
    updated = models.DateTimeField(auto_now=True)

    project_paths = ("project",)
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "patient_hash"], name="deid_mapping_one_per_patient")]
