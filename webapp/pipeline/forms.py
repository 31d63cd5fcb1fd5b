import re

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from ml.relevance import DTYPES, NORMALISE
from webapp.corpus.models import Corpus, Note, Task
from webapp.lib.seeds import MAX_SEED
from webapp.pipeline.jobs import JobSpec
from webapp.pipeline.models import ModelVersion, RelevanceJob
from webapp.pipeline.sizing import CHUNK_SECONDS, MAX_CHUNK_SIZE, UNMEASURED_CHUNK
from webapp.projects.forms import ScopedChoicesForm
from webapp.projects.roles import Capability

TEMPLATE_CHOICES = [
    ("en", gettext_lazy("English (the paper's prompt)")),
    ("it", gettext_lazy("Italian (the reference code's prompt)")),
    ("es", gettext_lazy("Spanish (the English prompt's structure)")),
    ("custom", gettext_lazy("Custom")),
]
NORMALISE_LABELS = {
    "abs": gettext_lazy("|r| / max |r| (reference code)"),
    "clip": gettext_lazy("max(r, 0) / max r (positive relevance only)"),
}
DTYPE_LABELS = {
    "auto": gettext_lazy("Auto (bf16 where fast, else float32)"),
    "float32": "float32",
    "bfloat16": "bfloat16",
    "float16": gettext_lazy("float16 (GPU)"),
}
MAX_LISTED = 5


class LaunchForm(ScopedChoicesForm, forms.Form):
    scope_capability = Capability.LAUNCH

    corpus = forms.ModelChoiceField(Corpus.objects.order_by("name"), empty_label=None, label=gettext_lazy("Corpus"))
    limit = forms.IntegerField(
        min_value=1,
        required=False,
        label=gettext_lazy("Only the first N notes"),
        help_text=gettext_lazy("Empty: every note of the corpus"),
    )
    external_ids = forms.CharField(
        required=False,
        label=gettext_lazy("Only these notes"),
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy("Note ids as imported, separated by commas, spaces or new lines"),
    )
    task_selection = forms.ChoiceField(
        choices=RelevanceJob.TaskSelection.choices,
        widget=forms.RadioSelect,
        initial=RelevanceJob.TaskSelection.SAMPLE,
        label=gettext_lazy("Tasks per note"),
    )
    tasks = forms.ModelMultipleChoiceField(
        Task.objects.active().order_by("slug"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 8}),
        label=gettext_lazy("Task pool"),
        help_text=gettext_lazy(
            "Required for 'Chosen tasks'; otherwise the tasks to use or sample from (none chosen: every task)"
        ),
    )
    include_held_out = forms.BooleanField(
        required=False,
        label=gettext_lazy("Include held-out tasks"),
        help_text=gettext_lazy("Off by default: held-out tasks stay out of DSM training"),
    )
    sample_k = forms.IntegerField(
        initial=9,
        label=gettext_lazy("k (random tasks per note)"),
        help_text=gettext_lazy("Random tasks per note from the task pool (the paper samples 9)"),
    )
    seed = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=MAX_SEED,
        label=gettext_lazy("Seed"),
        help_text=gettext_lazy("The same seed gives every note the same tasks again"),
    )
    model_version = forms.ModelChoiceField(ModelVersion.objects.all(), empty_label=None, label=gettext_lazy("Model"))
    method = forms.ChoiceField(
        choices=RelevanceJob.Method.choices, initial=RelevanceJob.Method.ATTNLRP, label=gettext_lazy("Method")
    )
    template_choice = forms.ChoiceField(
        choices=TEMPLATE_CHOICES, initial="en", widget=forms.RadioSelect, label=gettext_lazy("Prompt template")
    )
    custom_template = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label=gettext_lazy("Custom template"),
        help_text=gettext_lazy(
            "With {note} and {task}, the task last, e.g. “{note} In this patient we observe {task}”"
        ),
    )
    explain = forms.ChoiceField(
        choices=RelevanceJob.Explain.choices,
        initial=RelevanceJob.Explain.NEXT,
        required=False,
        label=gettext_lazy("Prediction explained"),
        help_text=gettext_lazy(
            "Next: the reference code's. Span: every token of the task description, "
            "same cost. Contrastive: the task minus a neutral description, "
            "up to twice the cost"
        ),
    )
    neutral = forms.CharField(
        required=False,
        max_length=200,
        label=gettext_lazy("Neutral description"),
        help_text=gettext_lazy(
            "Contrastive only. Empty: the template's (en “the patient”, "
            "it “il paziente”, es “el paciente”); required with a custom template"
        ),
    )
    normalise = forms.ChoiceField(
        choices=[(n, NORMALISE_LABELS[n]) for n in NORMALISE],
        initial="abs",
        required=False,
        label=gettext_lazy("Normalisation"),
        help_text=gettext_lazy("Clip suits contrastive maps: only what supports the task over the neutral description"),
    )
    dtype = forms.ChoiceField(
        choices=[(d, DTYPE_LABELS[d]) for d in DTYPES],
        initial="auto",
        required=False,
        label=gettext_lazy("Precision"),
        help_text=gettext_lazy(
            "Auto: bf16 where the worker computes it fast, else float32. Plain gradient x input needs float32"
        ),
    )
    chunk_size = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_CHUNK_SIZE,
        label=gettext_lazy("Chunk size"),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        default = ModelVersion.objects.filter(is_default=True).first()
        if default is not None:
            self.fields["model_version"].initial = default.pk
        # the catalog's size, not the paper's (136): imported catalogs differ
        count = Task.objects.visible_to(self.user).active().count()
        self.fields["sample_k"].help_text = ngettext(
            "Random tasks per note, drawn from the pool (none chosen: the %(count)s tasks of the catalog and "
            "your projects); the paper samples 9",
            "Random tasks per note, drawn from the pool (none chosen: the %(count)s tasks of the catalog and "
            "your projects); the paper samples 9",
            count,
        ) % {"count": count}
        self.fields["chunk_size"].help_text = _(
            "Prompts per worker task; empty: about %(seconds)s s of work at this model's measured rate "
            "(%(unmeasured)s until a job of it is measured), so progress and maps arrive that often"
        ) % {"seconds": CHUNK_SECONDS, "unmeasured": UNMEASURED_CHUNK}

    def clean_external_ids(self):
        return [part for part in re.split(r"[\s,]+", self.cleaned_data["external_ids"]) if part]

    def clean(self):
        data = super().clean()
        if data.get("template_choice") == "custom" and not (data.get("custom_template") or "").strip():
            self.add_error("custom_template", _("Write the custom template, with {note} and {task}."))
        if "corpus" not in data or "model_version" not in data or self.errors:
            return data
        spec = self.spec()
        self._check_external_ids(spec)
        for problem_field, problem in spec.problems().items():
            self.add_error(self._field_for(problem_field), problem)
        return data

    def spec(self) -> JobSpec:
        data = self.cleaned_data
        note_filter = {}
        if data.get("external_ids"):
            note_filter["external_ids"] = data["external_ids"]
        if data.get("limit"):
            note_filter["limit"] = data["limit"]
        custom = data.get("template_choice") == "custom"
        explain = data.get("explain") or RelevanceJob.Explain.NEXT  # not posted: the default
        contrastive = explain == RelevanceJob.Explain.CONTRASTIVE
        return JobSpec(
            corpus=data["corpus"],
            model_version=data["model_version"],
            method=data["method"],
            template=data["custom_template"] if custom else data["template_choice"],
            explain=explain,
            neutral=(data.get("neutral") or "") if contrastive else "",
            normalise=data.get("normalise") or "abs",
            dtype=data.get("dtype") or "auto",
            task_selection=data["task_selection"],
            tasks=list(data.get("tasks") or []),
            include_held_out=data.get("include_held_out", False),
            sample_k=data["sample_k"],
            seed=data["seed"],
            note_filter=note_filter,
            chunk_size=data.get("chunk_size"),
        )

    def _check_external_ids(self, spec):
        wanted = spec.note_filter.get("external_ids")
        if not wanted:
            return
        found = set(
            Note.objects.filter(corpus=spec.corpus, external_id__in=wanted).values_list("external_id", flat=True)
        )
        missing = [i for i in wanted if i not in found]
        if missing:
            listed = ", ".join(missing[:MAX_LISTED])
            if len(missing) > MAX_LISTED:
                more = len(missing) - MAX_LISTED
                listed = ngettext("%(ids)s and %(count)s more", "%(ids)s and %(count)s more", more) % {
                    "ids": listed,
                    "count": more,
                }
            self.add_error(
                "external_ids",
                _("Corpus %(corpus)s has no note %(ids)s.") % {"corpus": spec.corpus.name, "ids": listed},
            )

    def _field_for(self, problem_field):
        if problem_field == "template":
            return "custom_template" if self.cleaned_data.get("template_choice") == "custom" else "template_choice"
        if problem_field == "note_filter":
            return "external_ids" if self.cleaned_data.get("external_ids") else None
        return problem_field if problem_field in self.fields else None


class MapImportForm(ScopedChoicesForm, forms.Form):
    """Upload a file of relevance maps computed elsewhere (webapp.pipeline.mapimport_jobs). The
    corpus and the model version are offered, and accepted, only from the person's projects where
    they may import (another project's id in the body fails like an unknown choice)."""

    scope_capability = Capability.IMPORT

    corpus = forms.ModelChoiceField(Corpus.objects.order_by("name"), empty_label=None, label=gettext_lazy("Corpus"))
    model_version = forms.ModelChoiceField(
        ModelVersion.objects.order_by("name"), empty_label=None, label=gettext_lazy("Model version")
    )
    file = forms.FileField(
        label=gettext_lazy("File of maps"),
        help_text=gettext_lazy(
            "JSON Lines, one map a line: the note's id, the task, and the note tokens with their scores, "
            "character spans with scores, or the whole prompt's input_ids with their relevance (the "
            "AttnLRP authors' package)"
        ),
    )
    template = forms.ChoiceField(
        choices=TEMPLATE_CHOICES[:3], initial="en", label=gettext_lazy("Prompt template the maps were computed on")
    )
    explain = forms.ChoiceField(
        choices=[c for c in RelevanceJob.Explain.choices if c[0] != RelevanceJob.Explain.CONTRASTIVE],
        initial=RelevanceJob.Explain.NEXT,
        label=gettext_lazy("Prediction explained"),
    )
    source = forms.CharField(
        required=False,
        max_length=200,
        label=gettext_lazy("Source"),
        help_text=gettext_lazy("Where the maps come from, e.g. “captum IG” or “lxt 2.1”"),
    )
    replace = forms.BooleanField(
        required=False,
        label=gettext_lazy("Replace maps imported before for the same notes and tasks"),
    )

    def clean_file(self):
        from django.conf import settings

        from webapp.lib.import_limits import over_limit

        file = self.cleaned_data["file"]
        if file.size > settings.IMPORT_MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                over_limit(file.name, file.size, settings.IMPORT_MAX_UPLOAD_BYTES, "IMPORT_MAX_UPLOAD_BYTES", "bytes")
            )
        return file

    def launch(self, actor, ip: str | None = None):
        from webapp.pipeline import mapimport_jobs

        data = self.cleaned_data
        return mapimport_jobs.launch(
            data["file"],
            corpus=data["corpus"],
            model_version=data["model_version"],
            template=data["template"],
            explain=data["explain"],
            source=data["source"],
            replace=data["replace"],
            actor=actor,
            ip=ip,
        )
