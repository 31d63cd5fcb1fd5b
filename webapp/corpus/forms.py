from django import forms

from webapp.corpus.models import Corpus, ImportJob, language_code


class UploadForm(forms.Form):
    kind = forms.ChoiceField(choices=ImportJob.Kind.choices)
    corpus = forms.CharField(max_length=200, help_text="An existing corpus, or a new name (notes only)")
    language = forms.CharField(max_length=3, required=False, validators=[language_code],
                               help_text="ISO 639 code, needed for a new corpus, e.g. it or en")
    file = forms.FileField(help_text="JSONL or CSV (optionally .gz); a .zip of brat .txt/.ann files for notes")
    update = forms.BooleanField(required=False, help_text="Replace notes or labels that changed")

    def clean(self):
        data = super().clean()
        if data.get("kind") == ImportJob.Kind.ANNOTATIONS and data.get("corpus"):
            if not Corpus.objects.filter(name=data["corpus"]).exists():
                self.add_error("corpus", "No such corpus: import its notes first.")
        return data
