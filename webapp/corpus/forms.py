from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from webapp.corpus.limits import over_limit
from webapp.corpus.models import Corpus, ImportJob, language_code
from webapp.corpus.validators import hidden_character


def visible_name(value: str) -> None:
    """A corpus name holds no control or invisible characters (the importer refuses them too)."""
    hidden = hidden_character(value)
    if hidden:
        raise forms.ValidationError(f"The name contains {hidden}.")


class UploadForm(forms.Form):
    kind = forms.ChoiceField(choices=ImportJob.Kind.choices)
    corpus = forms.CharField(max_length=200, validators=[visible_name],
                             help_text="An existing corpus, or a new name (notes only)")
    language = forms.CharField(max_length=3, required=False, validators=[language_code],
                               help_text="ISO 639 code, needed for a new corpus, e.g. it or en")
    file = forms.FileField(help_text="JSONL or CSV (optionally gzip, bz2 or xz compressed); a .zip of brat "
                                     ".txt/.ann files for notes")
    update = forms.BooleanField(required=False, help_text="Replace notes or labels that changed")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["file"].help_text += f"; at most {filesizeformat(settings.IMPORT_MAX_UPLOAD_BYTES)}"

    def clean_file(self):
        """Refused here, the file is never stored (the import would refuse it too)."""
        file = self.cleaned_data["file"]
        if file.size > settings.IMPORT_MAX_UPLOAD_BYTES:
            raise forms.ValidationError(over_limit(file.name, file.size, settings.IMPORT_MAX_UPLOAD_BYTES,
                                                   "IMPORT_MAX_UPLOAD_BYTES", "bytes"))
        return file

    def clean(self):
        data = super().clean()
        if data.get("kind") == ImportJob.Kind.ANNOTATIONS and data.get("corpus"):
            if not Corpus.objects.filter(name=data["corpus"]).exists():
                self.add_error("corpus", "No such corpus: import its notes first.")
        return data
