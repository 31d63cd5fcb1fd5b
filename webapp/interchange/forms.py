from django import forms
from django.utils.translation import gettext, gettext_lazy

from webapp.lib.formats import writers
from webapp.pipeline.models import ModelVersion, PeakProfile


class ExportForm(forms.Form):
    """What to export; the format comes from the button pressed (one per format of the table)."""

    format = forms.ChoiceField(choices=[])  # the table's formats that have a writer, set per form
    gold = forms.BooleanField(required=False, initial=True, label=gettext_lazy("Gold spans (annotations' evidence)"))
    peaks = forms.ModelChoiceField(
        ModelVersion.objects.all(),
        required=False,
        to_field_name="name",
        label=gettext_lazy("Peaks of this model version, as pre-annotations"),
        empty_label=gettext_lazy("No peaks"),
    )
    profile = forms.ModelChoiceField(
        PeakProfile.objects.all(),
        required=False,
        label=gettext_lazy("Peak profile"),
        empty_label=gettext_lazy("The default profile"),
    )
    decisions = forms.BooleanField(required=False, label=gettext_lazy("Review decisions and adjudications"))

    def __init__(self, *args, project_id: int, **kwargs):
        """`project_id`: the corpus's; base models and the project's own are offered (not another
        project's, even to a member of both: a page of A names nothing of B)."""
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(f.name, gettext(f.label)) for f in writers()]
        self.fields["peaks"].queryset = ModelVersion.objects.of_project(project_id)
        self.fields["profile"].queryset = PeakProfile.objects.of_project(project_id)
