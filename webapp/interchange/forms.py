from django import forms

from webapp.interchange.formats import FORMATS
from webapp.pipeline.models import ModelVersion, PeakProfile


class ExportForm(forms.Form):
    """What to export; the format comes from the button pressed (one per format of the table)."""

    format = forms.ChoiceField(choices=[(f.name, f.label) for f in FORMATS.values()])
    gold = forms.BooleanField(required=False, initial=True, label="Gold spans (annotations' evidence)")
    peaks = forms.ModelChoiceField(
        ModelVersion.objects.all(),
        required=False,
        to_field_name="name",
        label="Peaks of this model version, as pre-annotations",
        empty_label="No peaks",
    )
    profile = forms.ModelChoiceField(
        PeakProfile.objects.all(), required=False, label="Peak profile", empty_label="The default profile"
    )
    decisions = forms.BooleanField(required=False, label="Review decisions and adjudications")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["peaks"].queryset = ModelVersion.objects.visible_to(user)  # base models and the user's projects'
