"""Forms whose choices (corpora, jobs, datasets, models, tasks) must offer only what the user may
act on: the access layer again, so a crafted POST naming another project's object fails
validation like any unknown choice."""

from django import forms
from django.db.models import QuerySet

from webapp.accounts.roles import Capability, Role
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

    def clean(self):
        """With a `corpus` chosen, every other chosen object is of the corpus's project or shared:
        a member of two projects does not build A's dataset with B's model, profile or tasks."""
        data = super().clean()
        corpus = data.get("corpus")
        if corpus is None or not hasattr(corpus, "project_id"):
            return data
        for name, value in list(data.items()):
            if name == "corpus":
                continue
            chosen = list(value) if isinstance(value, QuerySet | list | tuple) else [value]
            for obj in chosen:
                if hasattr(type(obj), "project_paths") and project_id_of(obj) not in (None, corpus.project_id):
                    self.add_error(name, "Choose one of the corpus's project, or a shared one.")
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
                raise forms.ValidationError("Choose the project.")
            chosen = choices[0]
        return chosen

    return clean


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(
        max_length=100, required=False, help_text="Stable short name for settings and commands; empty: from the name"
    )
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, help_text="The ward or study, and its approval"
    )


class MemberForm(forms.Form):
    username = forms.CharField(
        max_length=150, help_text="An existing account (identity-provider users exist after their first sign-in)"
    )
    role = forms.ChoiceField(choices=[(role.value, role.value) for role in Role])

    def clean_username(self):
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(username=self.cleaned_data["username"], is_active=True).first()
        if user is None:
            raise forms.ValidationError("No active account has this username.")
        return user
