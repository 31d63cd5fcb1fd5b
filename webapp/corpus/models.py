"""Corpora of clinical notes, the classification tasks (CRF items) and gold annotations.

Integrity lives in the database wherever SQL can say it: unique and CHECK constraints here,
and on PostgreSQL triggers (migration 0002) for the cross-row rules a CHECK cannot express:
a label must be one of its task's options, evidence spans must fit the note text, a note's
content_hash must be the SHA-256 of its text. On SQLite those cross-row rules are guarded by
`Annotation.clean()` and the importer (both use `webapp.lib.validators`).

Later models (relevance maps, peaks, datasets, runs) refer to Note and Task by foreign key;
no code may rely on note text being small, so list pages never load `text`.

An `ImportJob` is an upload from the Import page, imported in the background by a worker
(webapp.corpus.import_jobs, workers.imports) with the lifecycle every long work shares.
"""

import hashlib

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Length, Lower
from django.db.models.lookups import Exact, GreaterThan, GreaterThanOrEqual, LessThanOrEqual
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from webapp.corpus.expressions import JSONArrayLength, JSONType
from webapp.corpus.problem_text import english_lines
from webapp.lib import validators
from webapp.lib.markdown_html import render_markdown
from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import choice_word
from webapp.projects.scoping import ProjectScopedQuerySet

language_code = RegexValidator(r"^[a-z]{2,3}$", "Use a lower-case ISO 639 code such as 'it' or 'en'.")


def text_hash(text: str) -> str:
    """The content hash stored on a note: SHA-256 of its UTF-8 bytes, lower-case hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TriggerCounters(models.Model):
    """A row with counter columns that PostgreSQL triggers keep (`counter_fields`). Saving a row
    read earlier writes every other column but never those: its copy of a counter may be stale
    (an admin form opened before an import), and writing it back would undo the triggers' work."""

    counter_fields: tuple[str, ...] = ()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding and kwargs.get("update_fields") is None and not kwargs.get("force_insert"):
            kwargs["update_fields"] = [
                f.name for f in self._meta.concrete_fields if not f.primary_key and f.name not in self.counter_fields
            ]
        super().save(*args, **kwargs)


class Corpus(TriggerCounters):
    counter_fields = ("note_count", "annotation_count")

    project = models.ForeignKey(
        "projects.Project", on_delete=models.PROTECT, related_name="corpora", verbose_name=_("project")
    )
    name = models.CharField(max_length=200, help_text=_("Unique within its project"), verbose_name=_("name"))
    language = models.CharField(
        max_length=3,
        validators=[language_code],
        help_text=_("ISO 639 code of the notes' language, e.g. 'it', 'en'"),
        verbose_name=_("language"),
    )
    description = models.TextField(blank=True, verbose_name=_("description"))
    source = models.CharField(
        max_length=500,
        blank=True,
        help_text=_("Where the notes come from (site, export, licence)"),
        verbose_name=_("source"),
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    # Kept by triggers on every insert and delete of notes and annotations (migrations
    # 0005_corpus_counters on PostgreSQL, 0016_corpus_counters_sqlite on SQLite), so no page or
    # API answer counts a corpus's notes; see webapp.corpus.stats.
    note_count = models.BigIntegerField(default=0, db_default=0, editable=False, verbose_name=_("notes"))
    annotation_count = models.BigIntegerField(default=0, db_default=0, editable=False, verbose_name=_("annotations"))
    # De-identified: imported through the de-identifier, made by it from another corpus, or
    # marked so by a project admin (audited). Only such a corpus passes the gate (webapp.deid.gate).
    deidentified = models.BooleanField(default=False, db_default=False, verbose_name=_("de-identified"))
    deidentified_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="deidentified_versions",
        help_text=_("The corpus this one was de-identified from"),
        verbose_name=_("de-identified from"),
    )

    project_paths = ("project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("corpus")
        verbose_name_plural = _("corpora")
        ordering = ["name"]
        constraints = [
            # Per project, so "this name is taken" speaks of one's own project only.
            models.UniqueConstraint(fields=["project", "name"], name="corpus_corpus_name_per_project"),
            models.CheckConstraint(condition=~Q(name=""), name="corpus_corpus_name_not_blank"),
            models.CheckConstraint(
                condition=Q(
                    GreaterThanOrEqual(Length("language"), 2),
                    LessThanOrEqual(Length("language"), 3),
                    Exact(F("language"), Lower("language")),
                ),
                name="corpus_corpus_language_iso",
            ),
        ]

    def __str__(self):
        return self.name


class Note(models.Model):
    corpus = models.ForeignKey(
        Corpus, on_delete=models.CASCADE, related_name="notes", db_index=False, verbose_name=_("corpus")
    )
    external_id = models.CharField(
        max_length=200,
        help_text=_("The note's id in its source; unique within the corpus"),
        verbose_name=_("external id"),
    )
    text = models.TextField(verbose_name=_("text"))
    content_hash = models.CharField(
        max_length=64, editable=False, help_text=_("SHA-256 of the text (hex)"), verbose_name=_("content hash")
    )
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    project_paths = ("corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("clinical note")
        verbose_name_plural = _("clinical notes")
        constraints = [
            models.UniqueConstraint(fields=["corpus", "external_id"], name="corpus_note_external_id_unique"),
            models.CheckConstraint(condition=~Q(external_id=""), name="corpus_note_external_id_not_blank"),
            models.CheckConstraint(condition=~Q(text=""), name="corpus_note_text_not_blank"),
            models.CheckConstraint(
                condition=Q(Exact(Length("content_hash"), 64), Exact(F("content_hash"), Lower("content_hash"))),
                name="corpus_note_content_hash_sha256",
            ),
            models.CheckConstraint(condition=Exact(JSONType("metadata"), "object"), name="corpus_note_metadata_object"),
        ]
        indexes = [
            # Keyset pagination over millions of notes: WHERE corpus_id = %s AND id > %s ORDER BY id.
            models.Index(fields=["corpus", "id"], name="corpus_note_corpus_id_idx"),
        ]

    def __str__(self):
        # Its row id, not its external id: a site's external ids may be record numbers, and this
        # name is what Django's admin writes to its change log (django_admin_log).
        return gettext("note %(id)s of corpus %(corpus)s") % {"id": self.pk, "corpus": self.corpus_id}

    def save(self, *args, **kwargs):
        self.content_hash = text_hash(self.text)
        if kwargs.get("update_fields") is not None and "text" in kwargs["update_fields"]:
            kwargs["update_fields"] = {*kwargs["update_fields"], "content_hash"}
        super().save(*args, **kwargs)

    def clean(self):
        if not self.text.strip():
            raise ValidationError({"text": "The note text is empty."})


class TaskQuerySet(ProjectScopedQuerySet):
    """The one place task lists are chosen from, so scoping (per project) can be added here."""

    def active(self, project_id: int | None = None):
        """Tasks offered for new work (launch forms, the review queue): not retired; with a project,
        not retired in it either (a catalog task a project retired is retired there only)."""
        active = self.filter(retired=False)
        if project_id is None:
            return active
        return active.exclude(
            pk__in=ProjectTaskState.objects.filter(project_id=project_id, retired=True).values("task")
        )


class Task(TriggerCounters):
    """A classification task. Catalog tasks (`load_task_catalog`) have their description, options,
    group, held-out flag and aliases from the catalog file; app tasks are made on the Tasks page and
    a catalog load never touches them (webapp.corpus.catalog). Either kind can be retired: hidden
    from new work, kept with its data (webapp.corpus.tasks)."""

    class Origin(models.TextChoices):
        CATALOG = "catalog", _("Catalog")
        APP = "app", _("Made in the app")

    counter_fields = ("decision_count",)

    project = models.ForeignKey(
        "projects.Project",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="tasks",
        help_text=_("The project that made it; none for the shared catalog every project may use"),
        verbose_name=_("project"),
    )
    slug = models.SlugField(max_length=100, unique=True, verbose_name=_("slug"))
    description = models.CharField(
        max_length=500,
        unique=True,
        help_text=_("s_T, the short description used in prompts, e.g. 'heart rate'"),
        verbose_name=_("task description"),
    )
    options = models.JSONField(help_text=_("Ordered list of the allowed labels"), verbose_name=_("options"))
    group = models.CharField(max_length=100, blank=True, verbose_name=_("group"))
    held_out = models.BooleanField(
        default=False, help_text=_("Kept out of training to measure generalisation"), verbose_name=_("held out")
    )
    aliases = models.JSONField(
        default=list, blank=True, help_text=_("Other names accepted for this task on import"), verbose_name=_("aliases")
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    # Review decisions (review.PeakDecision rows, one per reviewer and peak) of this task, kept by
    # PostgreSQL triggers (review migration 0004_task_decision_count); see webapp.corpus.stats.
    decision_count = models.BigIntegerField(default=0, db_default=0, editable=False, verbose_name=_("review decisions"))
    origin = models.CharField(
        max_length=10,
        choices=Origin.choices,
        default=Origin.CATALOG,
        help_text=_("Who owns the task's definition"),
        verbose_name=_("origin"),
    )
    guideline = models.TextField(
        blank=True,
        help_text=_("Evidence guideline for annotators and reviewers (Markdown); its versions: TaskGuideline"),
        verbose_name=_("guideline"),
    )
    retired = models.BooleanField(
        default=False, help_text=_("Hidden from new jobs and the review queue; data kept"), verbose_name=_("retired")
    )

    objects = TaskQuerySet.as_manager()

    project_paths = ("project",)  # webapp.projects.scoping
    shared_when = {"project__isnull": True}

    class Meta:
        verbose_name = _("task")
        verbose_name_plural = _("tasks")
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(condition=~Q(slug=""), name="corpus_task_slug_not_blank"),
            models.CheckConstraint(condition=~Q(description=""), name="corpus_task_description_not_blank"),
            models.CheckConstraint(
                condition=Q(Exact(JSONType("options"), "array"), GreaterThan(JSONArrayLength("options"), 0)),
                name="corpus_task_options_nonempty_array",
            ),
            models.CheckConstraint(condition=Exact(JSONType("aliases"), "array"), name="corpus_task_aliases_array"),
        ]

    def __str__(self):
        return self.slug

    @property
    def guideline_html(self) -> str:
        """The current guideline as sanitised HTML (webapp.lib.markdown_html)."""
        return render_markdown(self.guideline)

    def clean(self):
        problems = validators.option_problems(self.options)
        if not isinstance(self.aliases, list) or not all(isinstance(a, str) and a for a in self.aliases):
            problems.append("aliases must be a list of non-empty strings")
        if problems:
            raise ValidationError({"options": problems})


class TaskGuideline(models.Model):
    """One version of a task's guideline, numbered 1, 2, ... per task; a new one is recorded each
    time the text changes (webapp.corpus.tasks), never edited. Task.guideline holds the latest
    text; a review decision names the version it was made under (PeakDecision.guideline_version).

    A catalog task's versions of no project are the catalog's (site admins write them); a project
    that adopts the task writes its own (`project`), which its reviewers read instead. The numbers
    run over every series of the task, so a decision's version names one row."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="guidelines")
    project = models.ForeignKey(
        "projects.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="The project whose guideline of a catalog task this is; none: the task's own (the catalog's)",
    )
    version = models.PositiveIntegerField()
    text = models.TextField(blank=True, help_text="Markdown, as written (empty: the guideline was cleared)")
    created = models.DateTimeField(auto_now_add=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["task", "-version"]
        constraints = [models.UniqueConstraint(fields=["task", "version"], name="corpus_taskguideline_unique")]

    def __str__(self):
        return gettext("%(task)s guideline v%(version)s") % {"task": self.task_id, "version": self.version}

    @property
    def html(self) -> str:
        """The text as sanitised HTML (webapp.lib.markdown_html), safe to insert in a page."""
        return render_markdown(self.text)


class ProjectTaskState(models.Model):
    """A catalog task as one project uses it: retired there (hidden from the project's new work and
    review queue) while every other project goes on using it (webapp.corpus.tasks.set_retired)."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="task_states")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="project_states")
    retired = models.BooleanField(default=False)

    project_paths = ("project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "task"], name="corpus_projecttaskstate_once")]

    def __str__(self):
        values = {"task": self.task_id, "project": self.project_id}
        if self.retired:
            return gettext("%(task)s in project %(project)s (retired)") % values
        return gettext("%(task)s in project %(project)s") % values


class Annotation(models.Model):
    note = models.ForeignKey(
        Note, on_delete=models.CASCADE, related_name="annotations", db_index=False, verbose_name=_("note")
    )
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="annotations", verbose_name=_("task"))
    label = models.CharField(max_length=validators.MAX_LABEL_LENGTH, verbose_name=_("label"))
    evidence = models.JSONField(
        default=list, blank=True, help_text=_("Half-open [start, end) character offsets"), verbose_name=_("evidence")
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="annotations",
        verbose_name=_("annotator"),
    )
    annotator_name = models.CharField(
        max_length=150,
        help_text=_("The user's name, or the source of imported labels, e.g. 'import:gold.jsonl'"),
        verbose_name=_("annotator name"),
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    project_paths = ("note__corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("annotation")
        verbose_name_plural = _("annotations")
        constraints = [
            # The name, not the nullable user, identifies the annotator, so imports are unique too.
            models.UniqueConstraint(fields=["note", "task", "annotator_name"], name="corpus_annotation_unique"),
            models.UniqueConstraint(
                fields=["note", "task", "annotator"],
                condition=Q(annotator__isnull=False),
                name="corpus_annotation_unique_user",
            ),
            models.CheckConstraint(condition=~Q(label=""), name="corpus_annotation_label_not_blank"),
            models.CheckConstraint(condition=~Q(annotator_name=""), name="corpus_annotation_annotator_not_blank"),
            models.CheckConstraint(
                condition=Exact(JSONType("evidence"), "array"), name="corpus_annotation_evidence_array"
            ),
        ]

    def __str__(self):
        return f"{self.note} {self.task}={self.label}"

    def save(self, *args, **kwargs):
        if not self.annotator_name and self.annotator is not None:
            self.annotator_name = self.annotator.get_username()
        super().save(*args, **kwargs)

    def clean(self):
        if not self.annotator_name and self.annotator is not None:
            self.annotator_name = self.annotator.get_username()
        errors = {}
        if self.task_id is not None:
            errors["label"] = validators.label_problems(self.label, self.task.options)
        if self.note_id is not None:
            errors["evidence"] = validators.span_problems(self.evidence, len(self.note.text))
        errors = {field: problems for field, problems in errors.items() if problems}
        if errors:
            raise ValidationError(errors)


class ImportJob(WorkUnit):
    """One uploaded file imported by a worker: validated whole, then written in one transaction.

    The upload stays stored (a private folder under DATA_DIR/uploads) while the job can still run,
    so a job whose worker was lost is imported again from it; it is removed once the job ended.
    `problems` holds the problems (file, line, reason), never note text: each its message's template
    and values, shown in the reader's language (webapp.corpus.problem_text); a row stored before
    that holds plain English lines. `problem_lines` is the English of either."""

    class Kind(models.TextChoices):
        NOTES = "notes", _("Notes")
        ANNOTATIONS = "annotations", _("Annotations (gold labels)")

    class Phase(models.TextChoices):
        VALIDATING = "validating", _("Validating")
        WRITING = "writing", _("Writing")

    kind = models.CharField(max_length=12, choices=Kind.choices)
    project = models.ForeignKey("projects.Project", on_delete=models.PROTECT, related_name="import_jobs")
    corpus_name = models.CharField(max_length=200)
    language = models.CharField(max_length=3, blank=True, help_text="set to create the corpus (notes only)")
    update = models.BooleanField(default=False, help_text="replace notes or labels that changed")
    deidentify = models.BooleanField(
        default=False, db_default=False, help_text="de-identify on the way in: the original text is never stored"
    )
    upload = models.CharField(
        max_length=500, blank=True, help_text="the stored file, relative to DATA_DIR/uploads; empty once removed"
    )
    file_name = models.CharField(max_length=255)
    file_size = models.PositiveBigIntegerField(default=0)
    phase = models.CharField(max_length=12, choices=Phase.choices, blank=True)
    records_done = models.PositiveBigIntegerField(default=0, help_text="records validated, or written, so far")
    records_total = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="records validated, known once writing starts"
    )
    created_count = models.PositiveBigIntegerField(default=0)
    updated_count = models.PositiveBigIntegerField(default=0)
    unchanged_count = models.PositiveBigIntegerField(default=0)
    problems = models.JSONField(default=list, blank=True, help_text="the first problem lines, never note text")
    problem_count = models.PositiveIntegerField(default=0)
    deid_counts = models.JSONField(
        default=dict, blank=True, help_text="de-identified on the way in: identifiers replaced per type, never values"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="import_jobs"
    )
    created = models.DateTimeField(auto_now_add=True)

    project_paths = ("project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return gettext("import %(import)s (%(status)s)") % {"import": self.pk, "status": choice_word(self, "status")}

    @property
    def resumable(self) -> bool:
        """Only a job whose worker was lost: a failed or cancelled import's upload is gone (upload it again)."""
        return self.is_stalled

    @property
    def problem_lines(self) -> list[str]:
        """The problems as English lines (the API, the download)."""
        return english_lines(self.problems)

    @property
    def more_problems(self) -> int:
        """Problems counted but not kept (only the first ones are listed)."""
        return max(0, self.problem_count - len(self.problems))
