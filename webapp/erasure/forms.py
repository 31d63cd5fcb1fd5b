"""The erasure form: what to erase, and what becomes of the dataset versions that held it."""

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from webapp.corpus.models import Corpus
from webapp.erasure.models import ErasureRequest
from webapp.projects.models import Project
from webapp.projects.roles import Capability

ERASE = Capability.MANAGE_MEMBERS  # project admins only (webapp.projects.roles)


class ErasureForm(forms.Form):
    project = forms.ModelChoiceField(Project.objects.none(), empty_label=None, label=gettext_lazy("Project"))
    scope = forms.ChoiceField(
        choices=ErasureRequest.Scope.choices, widget=forms.RadioSelect, label=gettext_lazy("Erase")
    )
    corpus = forms.ModelChoiceField(
        Corpus.objects.none(),
        required=False,
        label=gettext_lazy("Corpus"),
        help_text=gettext_lazy("Every scope but a whole project names its corpus"),
    )
    notes = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=gettext_lazy("Notes"),
        help_text=gettext_lazy("Notes: their ids in the corpus, one per line or separated by spaces"),
    )
    patient_key = forms.CharField(
        initial="patient_id",
        required=False,
        label=gettext_lazy("Patient key"),
        help_text=gettext_lazy("Patient: the notes' metadata key that names the patient"),
    )
    patients = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label=gettext_lazy("Patients"),
        help_text=gettext_lazy("Patient: the values, one per line (kept only as a keyed hash)"),
    )
    datasets = forms.ChoiceField(
        choices=ErasureRequest.Datasets.choices,
        initial=ErasureRequest.Datasets.WITHDRAW,
        widget=forms.RadioSelect,
        label=gettext_lazy("Dataset versions that held erased notes"),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        projects = Project.objects.where(user, ERASE)
        self.fields["project"].queryset = projects
        self.fields["corpus"].queryset = Corpus.objects.filter(project__in=projects).select_related("project")

    def clean(self):
        data = super().clean()
        project, corpus, scope = data.get("project"), data.get("corpus"), data.get("scope")
        if scope and scope != ErasureRequest.Scope.PROJECT:
            if corpus is None:
                self.add_error("corpus", _("Choose the corpus."))
            elif project is not None and corpus.project_id != project.pk:
                self.add_error(
                    "corpus",
                    _("Corpus %(corpus)s is not in project %(project)s.")
                    % {"corpus": corpus.name, "project": project.name},
                )
        return data

    def target(self) -> dict:
        """erasing.plan's and erasing.request's keyword arguments."""
        data = self.cleaned_data
        scope = data["scope"]
        return {
            "corpus": data["corpus"] if scope != ErasureRequest.Scope.PROJECT else None,
            "notes": data["notes"].split() if scope == ErasureRequest.Scope.NOTES else (),
            "patient_key": data["patient_key"].strip() if scope == ErasureRequest.Scope.PATIENT else "",
            "patients": [v for v in data["patients"].splitlines() if v.strip()]
            if scope == ErasureRequest.Scope.PATIENT
            else (),
        }

    @property
    def confirmation_word(self) -> str:
        """What the admin types to confirm: the corpus's name, or the project's slug."""
        data = self.cleaned_data
        if data["scope"] == ErasureRequest.Scope.PROJECT:
            return data["project"].slug
        return data["corpus"].name


class RetentionForm(forms.ModelForm):
    """A project's retention: empty keeps for good; at least a day, at most a century."""

    retain_notes_days = forms.IntegerField(
        required=False, min_value=1, max_value=36_500, label=gettext_lazy("Keep notes (days after their import)")
    )
    retain_exports_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=36_500,
        label=gettext_lazy("Keep exported files (days after they were made)"),
    )

    class Meta:
        model = Project
        fields = ["retain_notes_days", "retain_exports_days"]
