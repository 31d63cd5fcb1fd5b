from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.prompts import TEMPLATES
from webapp.corpus import import_jobs
from webapp.corpus.models import Corpus, ImportJob
from webapp.lib.formats import FORMATS, readers
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
        raise forms.ValidationError(_("The name contains %(character)s.") % {"character": hidden.render(_)})


# The languages the studio supports: those with a built-in prompt template (ml/prompts.py).
LANGUAGE_NAMES = {"it": gettext_lazy("Italian"), "en": gettext_lazy("English"), "es": gettext_lazy("Spanish")}
LANGUAGES = [
    (code, format_lazy("{name} ({code})", name=LANGUAGE_NAMES.get(code, code), code=code)) for code in TEMPLATES
]
KEEP_LANGUAGE = ""
NEW_CORPUS_NEEDS_LANGUAGE = gettext_lazy("This corpus does not exist yet: choose its language to create it.")


class UploadForm(forms.Form):
    project = forms.ModelChoiceField(
        Project.objects.none(),
        required=False,
        empty_label=None,
        label=gettext_lazy("Project"),
        help_text=gettext_lazy("Who may see the notes"),
    )
    kind = forms.ChoiceField(choices=ImportJob.Kind.choices, label=gettext_lazy("Kind"))
    corpus = forms.CharField(
        max_length=200,
        validators=[visible_name],
        label=gettext_lazy("Corpus"),
        help_text=gettext_lazy("An existing corpus, or a new name (notes only)"),
    )
    language = forms.ChoiceField(
        choices=[(KEEP_LANGUAGE, gettext_lazy("Keep the corpus's language")), *LANGUAGES],
        label=gettext_lazy("Language"),
        required=False,
        help_text=gettext_lazy("Needed to create a new corpus (notes); an existing corpus keeps its own"),
    )
    file = forms.FileField(
        label=gettext_lazy("File"),
    )
    update = forms.BooleanField(
        required=False, label=gettext_lazy("Update"), help_text=gettext_lazy("Replace notes or labels that changed")
    )
    deidentify = forms.BooleanField(
        required=False,
        label=gettext_lazy("De-identify on the way in"),
        help_text=gettext_lazy(
            "Notes: each note's text and metadata go through the project's de-identification policy before "
            "they are stored (the original is never kept); a new corpus is made de-identified. A de-identified "
            "corpus takes notes this way only"
        ),
    )
    # The file's format, a name of the format table (webapp.lib.formats; choices set per form from
    # the table): notes are read from any, gold labels from one with spans, with a mapping
    # (webapp.corpus.gold). `annotation_format` is its older name (the API takes either).
    format = forms.ChoiceField(
        choices=[],
        required=False,
        label=gettext_lazy("Format"),
        help_text=gettext_lazy(
            "Empty: notes told from the file's name (JSONL, CSV, a zip of brat or XMI files), gold labels "
            "JSONL (note_id, task, label, evidence). Gold labels from an annotation tool's files need a mapping"
        ),
    )
    mapping = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        label=gettext_lazy("Mapping"),
        help_text=gettext_lazy(
            "One a line: LABEL=TASK:VALUE, LABEL[attr=value]=TASK:VALUE, LABEL=TASK (evidence only), "
            "LABEL=- (skip), *=- (skip every other label); a label task:value maps to itself"
        ),
    )
    layer = forms.CharField(
        required=False,
        max_length=200,
        label=gettext_lazy("Layer"),
        help_text=gettext_lazy("XMI: the layer to read (default: every custom one)"),
    )
    feature = forms.CharField(
        required=False,
        max_length=200,
        label=gettext_lazy("Feature"),
        help_text=gettext_lazy("XMI: the feature holding the label"),
    )
    missing_feature = forms.ChoiceField(
        choices=[
            ("refuse", gettext_lazy("Refuse the file")),
            ("skip", gettext_lazy("Skip the span")),
            ("default", gettext_lazy("Give it the default label")),
        ],
        initial="refuse",
        required=False,
        label=gettext_lazy("Spans without the feature"),
        help_text=gettext_lazy("XMI: what becomes of an annotation that lacks the feature; the preview counts them"),
    )
    feature_default = forms.CharField(
        required=False,
        max_length=200,
        label=gettext_lazy("Default label"),
        help_text=gettext_lazy("XMI: the label of spans without the feature"),
    )
    annotator = forms.CharField(
        required=False,
        max_length=150,
        validators=[visible_name],
        label=gettext_lazy("Annotator"),
        help_text=gettext_lazy(
            "Whose gold labels these are, a person or a source; left empty, the annotator each span "
            "carries in an annotation tool's file (as our exports write it), or import:<file name> for JSONL"
        ),
    )
    preview = forms.BooleanField(
        required=False,
        label=gettext_lazy("Preview only"),
        help_text=gettext_lazy("Check and count what would be imported; write nothing"),
    )

    def __init__(self, data=None, *args, user, **kwargs):
        if data is not None and not data.get("format") and data.get("annotation_format"):
            data = data.copy()
            data["format"] = data["annotation_format"]
        super().__init__(data, *args, **kwargs)
        self.fields["project"].queryset = Project.objects.where(user, Capability.IMPORT)
        self.fields["file"].help_text = _(
            "Notes: a file of any format below, JSONL and CSV optionally gzip, bz2 or xz compressed, brat "
            "and XMI as a .zip of their files; gold labels: JSONL, or an annotation tool's files; at most %(size)s"
        ) % {"size": filesizeformat(settings.IMPORT_MAX_UPLOAD_BYTES)}
        self.fields["format"].choices = [("", _("Told from the file (notes); gold labels JSONL"))] + [
            (f.name, _(f.label)) for f in readers()
        ]

    clean_project = only_choice_when_blank("project")

    @property
    def format_names(self) -> str:
        """The formats notes are read in, for the page's help ("JSONL, CSV, brat, ...")."""
        return ", ".join(str(name) for code, name in self.fields["format"].choices if code)

    @property
    def language_names(self) -> str:
        return ", ".join(str(name) for code, name in self.fields["language"].choices if code)

    def clean_mapping(self):
        try:
            parse_mapping(self.cleaned_data["mapping"].splitlines())
        except MappingError as exc:
            raise forms.ValidationError(exc.said.render(_)) from None
        return self.cleaned_data["mapping"]

    def clean_preview(self):
        """The last field: the file's format and an annotation tool's options travel with the file,
        which uploads.store keeps beside it for the worker (ImportJob has no field for them)."""
        data = self.cleaned_data
        fmt, kind = data.get("format"), data.get("kind")
        if kind == ImportJob.Kind.NOTES and data.get("mapping", "").strip():
            self.add_error(
                "mapping",
                _(
                    "A mapping makes an annotation tool's labels gold labels: import the notes first, then the same "
                    "file as gold labels with this mapping."
                ),
            )
        elif fmt and kind == ImportJob.Kind.ANNOTATIONS and not FORMATS[fmt].spans:
            label = _(FORMATS[fmt].label)
            self.add_error(
                "format",
                _("%(format)s carries no spans: gold labels come from a format that does.") % {"format": label},
            )
        elif fmt and kind == ImportJob.Kind.ANNOTATIONS and data.get("file") is not None:
            data["file"].import_options = {
                "format": fmt,
                "mapping": data.get("mapping", "").splitlines(),
                "layer": data.get("layer", ""),
                "feature": data.get("feature", ""),
                "missing_feature": data.get("missing_feature") or "refuse",
                "feature_default": data.get("feature_default", ""),
                "annotator": data.get("annotator", ""),
                "dry_run": data["preview"],
            }
        elif data["preview"]:
            self.add_error("preview", _("A preview is for gold labels from an annotation tool's files."))
        elif fmt and kind == ImportJob.Kind.NOTES and data.get("file") is not None:
            data["file"].import_options = {"format": fmt}  # read with this format's reader, not by the name
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
                self.add_error("corpus", _("No such corpus in this project: import its notes first."))
        elif data.get("kind") == ImportJob.Kind.NOTES and data.get("corpus"):
            existing = named
            language = data.get("language", KEEP_LANGUAGE)
            if existing is None and language == KEEP_LANGUAGE and "language" not in self.errors:
                self.add_error("language", NEW_CORPUS_NEEDS_LANGUAGE)
            elif existing is not None and language not in (KEEP_LANGUAGE, existing.language):
                self.add_error(
                    "language",
                    _("This corpus is in %(language)s (%(code)s): keep the corpus's language.")
                    % {"language": LANGUAGE_NAMES.get(existing.language, existing.language), "code": existing.language},
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
                self.add_error("deidentify", _("De-identification on the way in is for notes."))
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
