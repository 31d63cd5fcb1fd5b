from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from ml.prompts import TEMPLATES
from webapp.corpus import import_jobs
from webapp.corpus.models import Corpus, ImportJob
from webapp.lib.formats import FORMATS
from webapp.lib.formats.mapping import MappingError, parse_mapping
from webapp.lib.import_limits import over_limit
from webapp.lib.validators import hidden_character
from webapp.projects.forms import only_choice_when_blank
from webapp.projects.models import Project
from webapp.projects.roles import Capability


def visible_name(value: str) -> None:
    """A corpus name holds no control or invisible characters (the importer refuses them too)."""
    hidden = hidden_character(value)
    if hidden:
        raise forms.ValidationError(f"The name contains {hidden}.")


# The languages the studio supports: those with a built-in prompt template (ml/prompts.py).
LANGUAGE_NAMES = {"it": "Italian", "en": "English", "es": "Spanish"}
LANGUAGES = [(code, f"{LANGUAGE_NAMES.get(code, code)} ({code})") for code in TEMPLATES]
KEEP_LANGUAGE = ""
NEW_CORPUS_NEEDS_LANGUAGE = "This corpus does not exist yet: choose its language to create it."


class UploadForm(forms.Form):
    project = forms.ModelChoiceField(
        Project.objects.none(), required=False, empty_label=None, help_text="Who may see the notes"
    )
    kind = forms.ChoiceField(choices=ImportJob.Kind.choices)
    corpus = forms.CharField(
        max_length=200, validators=[visible_name], help_text="An existing corpus, or a new name (notes only)"
    )
    language = forms.ChoiceField(
        choices=[(KEEP_LANGUAGE, "Keep the corpus's language"), *LANGUAGES],
        required=False,
        help_text="Needed to create a new corpus (notes); an existing corpus keeps its own",
    )
    file = forms.FileField(
        help_text="JSONL or CSV (optionally gzip, bz2 or xz compressed); a .zip of brat .txt/.ann files for notes"
    )
    update = forms.BooleanField(required=False, help_text="Replace notes or labels that changed")
    deidentify = forms.BooleanField(
        required=False,
        label="De-identify on the way in",
        help_text="Notes: each note's text and metadata go through the project's de-identification policy before "
        "they are stored (the original is never kept); a new corpus is made de-identified. A de-identified corpus "
        "takes notes this way only",
    )
    # Gold evidence from an annotation tool's files (webapp.corpus.gold): gold labels only.
    annotation_format = forms.ChoiceField(
        choices=[("", "Gold labels JSONL (note_id, task, label, evidence)")]
        + [(f.name, f.label) for f in FORMATS.values()],
        required=False,
        label="Gold labels from",
        help_text="brat and XMI: a .zip of their files; Label Studio: its JSON export; doccano and ours: JSONL",
    )
    mapping = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        help_text="One a line: LABEL=TASK:VALUE, LABEL[attr=value]=TASK:VALUE, LABEL=TASK (evidence only), "
        "LABEL=- (skip), *=- (skip every other label); a label task:value maps to itself",
    )
    layer = forms.CharField(
        required=False, max_length=200, help_text="XMI: the layer to read (default: every custom one)"
    )
    feature = forms.CharField(required=False, max_length=200, help_text="XMI: the feature holding the label")
    missing_feature = forms.ChoiceField(
        choices=[
            ("refuse", "Refuse the file"),
            ("skip", "Skip the span"),
            ("default", "Give it the default label"),
        ],
        initial="refuse",
        required=False,
        label="Spans without the feature",
        help_text="XMI: what becomes of an annotation that lacks the feature; the preview counts them",
    )
    feature_default = forms.CharField(
        required=False, max_length=200, label="Default label", help_text="XMI: the label of spans without the feature"
    )
    annotator = forms.CharField(
        required=False,
        max_length=150,
        validators=[visible_name],
        help_text="Whose gold labels these are, a person or a source; left empty, the annotator each span "
        "carries in an annotation tool's file (as our exports write it), or import:<file name> for JSONL",
    )
    preview = forms.BooleanField(
        required=False, label="Preview only", help_text="Check and count what would be imported; write nothing"
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = Project.objects.where(user, Capability.IMPORT)
        self.fields["file"].help_text += f"; at most {filesizeformat(settings.IMPORT_MAX_UPLOAD_BYTES)}"

    clean_project = only_choice_when_blank("project")

    def clean_mapping(self):
        try:
            parse_mapping(self.cleaned_data["mapping"].splitlines())
        except MappingError as exc:
            raise forms.ValidationError(str(exc)) from None
        return self.cleaned_data["mapping"]

    def clean_preview(self):
        """The last field: an annotation tool's options travel with the file, which
        uploads.store keeps beside it for the worker (ImportJob has no field for them)."""
        data = self.cleaned_data
        if data.get("annotation_format") and data.get("kind") != ImportJob.Kind.ANNOTATIONS:
            self.add_error("annotation_format", "Annotation-tool files hold gold labels: choose that kind.")
        elif data.get("annotation_format") and data.get("file") is not None:
            data["file"].import_options = {
                "format": data["annotation_format"],
                "mapping": data.get("mapping", "").splitlines(),
                "layer": data.get("layer", ""),
                "feature": data.get("feature", ""),
                "missing_feature": data.get("missing_feature") or "refuse",
                "feature_default": data.get("feature_default", ""),
                "annotator": data.get("annotator", ""),
                "dry_run": data["preview"],
            }
        elif data["preview"]:
            self.add_error("preview", "A preview is for gold labels from an annotation tool's files.")
        elif data.get("annotator") and data.get("kind") == ImportJob.Kind.ANNOTATIONS and data.get("file"):
            data["file"].import_options = {"annotator": data["annotator"]}  # gold labels JSONL: whose they are
        return data["preview"]

    def launch(self, actor, ip: str | None = None):
        """The import job of a valid form (the Import page and the API launch it alike)."""
        data = self.cleaned_data
        return import_jobs.launch(
            data["file"],
            project=data["project"],
            kind=data["kind"],
            corpus=data["corpus"],
            language=data["language"],
            update=data["update"],
            deidentify=data.get("deidentify", False),
            actor=actor,
            ip=ip,
        )

    def clean_file(self):
        """Refused here, the file is never stored (the import would refuse it too)."""
        file = self.cleaned_data["file"]
        if file.size > settings.IMPORT_MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                over_limit(file.name, file.size, settings.IMPORT_MAX_UPLOAD_BYTES, "IMPORT_MAX_UPLOAD_BYTES", "bytes")
            )
        return file

    def clean(self):
        data = super().clean()
        if data.get("project") is None:
            return data
        # Names are unique within a project: another project's corpus of this name is no concern here.
        named = Corpus.objects.filter(name=data.get("corpus", ""), project=data["project"]).first()
        if data.get("kind") == ImportJob.Kind.ANNOTATIONS and data.get("corpus"):
            if named is None:
                self.add_error("corpus", "No such corpus in this project: import its notes first.")
        elif data.get("kind") == ImportJob.Kind.NOTES and data.get("corpus"):
            existing = named
            language = data.get("language", KEEP_LANGUAGE)
            if existing is None and language == KEEP_LANGUAGE and "language" not in self.errors:
                self.add_error("language", NEW_CORPUS_NEEDS_LANGUAGE)
            elif existing is not None and language not in (KEEP_LANGUAGE, existing.language):
                self.add_error(
                    "language",
                    f"This corpus is in {LANGUAGE_NAMES.get(existing.language, existing.language)} "
                    f"({existing.language}): keep the corpus's language.",
                )
        if data.get("kind") == ImportJob.Kind.ANNOTATIONS:
            data["language"] = KEEP_LANGUAGE  # gold labels never create a corpus
        self._check_deidentify(data, named)
        return data

    def _check_deidentify(self, data, corpus) -> None:
        """De-identification on the way in is for notes; a de-identified corpus takes no other, and
        a corpus that is not cannot become one; the project's policy must be usable for the language."""
        from webapp.corpus.importing import deidentified_mismatch
        from webapp.deid.policy import PolicyError, check

        wanted = data.get("deidentify", False)
        if data.get("kind") != ImportJob.Kind.NOTES:
            if wanted:
                self.add_error("deidentify", "De-identification on the way in is for notes.")
            return
        if corpus is not None and (reason := deidentified_mismatch(corpus, wanted)):
            self.add_error("deidentify", reason[0].upper() + reason[1:] + ".")
            return
        language = corpus.language if corpus is not None else data.get("language")
        if wanted and language:
            try:
                check(data["project"], language)
            except PolicyError as exc:
                self.add_error("deidentify", str(exc))
