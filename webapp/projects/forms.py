"""Forms whose choices (corpora, jobs, datasets, models, tasks) must offer only what the user may
act on: the access layer again, so a crafted POST naming another project's object fails
validation like any unknown choice."""

from django import forms
from django.db.models import QuerySet
from django.utils.translation import gettext as _

from webapp.projects.roles import Capability
from webapp.projects.scoping import project_id_of


class ScopedChoicesForm:
    """Mixin (first among the bases): pass `user=`; every model choice field whose model a project
    owns is limited to the rows where the user has `scope_capability`."""

    scope_capability = Capability.VIEW

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        for field in self.fields.values():
            queryset = getattr(field, "queryset", None)
            if queryset is not None and hasattr(queryset.model, "project_paths"):
                field.queryset = queryset.visible_to(user, self.scope_capability)

    # The choice that decides the project the work is in (a corpus; a run's dataset or split).
    anchors = ("corpus", "dataset", "split", "split_corpus")

    def clean(self):
        """Every chosen object is of the project of the first anchor chosen, or shared: a member of
        two projects does not build A's dataset with B's model, profile or tasks, nor train on A's
        dataset from B's model."""
        data = super().clean()
        anchor = next((data[name] for name in self.anchors if data.get(name) is not None), None)
        if anchor is None or not hasattr(type(anchor), "project_paths"):
            return data
        project_id = project_id_of(anchor)
        for name, value in list(data.items()):
            chosen = list(value) if isinstance(value, QuerySet | list | tuple) else [value]
            for obj in chosen:
                if hasattr(type(obj), "project_paths") and project_id_of(obj) not in (None, project_id):
                    self.add_error(
                        name, _("Choose one of the project of the corpus (or dataset) chosen, or a shared one.")
                    )
                    break
        return data


def only_choice_when_blank(field_name: str):
    """A clean_<field> for a project choice: blank means the user's one project, when they have
    exactly one (most users), so forms and scripts need not name it."""

    def clean(self):
        chosen = self.cleaned_data.get(field_name)
        if chosen is None:
            choices = list(self.fields[field_name].queryset[:2])
            if len(choices) != 1:
                raise forms.ValidationError(_("Choose the project."))
            chosen = choices[0]
        return chosen

    return clean
