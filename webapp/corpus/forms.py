from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from ml.prompts import TEMPLATES
from webapp.corpus.models import Corpus, ImportJob
from webapp.lib.import_limits import over_limit
from webapp.lib.validators import hidden_character


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

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["file"].help_text += f"; at most {filesizeformat(settings.IMPORT_MAX_UPLOAD_BYTES)}"

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
        if data.get("kind") == ImportJob.Kind.ANNOTATIONS and data.get("corpus"):
            if not Corpus.objects.filter(name=data["corpus"]).exists():
                self.add_error("corpus", "No such corpus: import its notes first.")
        elif data.get("kind") == ImportJob.Kind.NOTES and data.get("corpus"):
            existing = Corpus.objects.filter(name=data["corpus"]).first()
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
        return data
