"""The task form of the Tasks page: what a researcher types, normalised and checked.

Text is read in Unicode NFC and trimmed, as the importer reads task names and labels, and refused
when it holds a character the importer refuses (control, invisible format, bidi control)."""

import unicodedata

from django import forms
from django.conf import settings
from django.utils.formats import number_format
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.catalog import MAX_SLUG_LENGTH, SLUG_RE, slugify
from webapp.corpus.models import Task
from webapp.corpus.tasks import editable_fields, manageable_tasks
from webapp.lib.validators import MAX_LABEL_LENGTH, hidden_character
from webapp.projects.forms import only_choice_when_blank
from webapp.projects.models import Project
from webapp.projects.roles import Capability

MIN_OPTIONS = 2
# what _normal names in its refusal ("The description contains a bidi control.")
WHAT = {
    "description": gettext_lazy("The description"),
    "slug": gettext_lazy("The slug"),
    "option": gettext_lazy("The option"),
    "group": gettext_lazy("The group"),
}


def _count(n: int) -> str:
    return number_format(n, force_grouping=True)


def _normal(value: str, what: str) -> str:
    value = unicodedata.normalize("NFC", value).strip()
    hidden = hidden_character(value)
    if hidden:
        raise forms.ValidationError(
            _("%(what)s contains %(hidden)s.") % {"what": WHAT.get(what, what), "hidden": hidden.render(_)}
        )
    return value


class TaskForm(forms.Form):
    project = forms.ModelChoiceField(
        Project.objects.none(),
        required=False,
        empty_label=None,
        label=gettext_lazy("Project"),
        help_text=gettext_lazy("The project whose corpora the task is for"),
    )
    description = forms.CharField(
        max_length=500,
        label=gettext_lazy("Description (s_T)"),
        help_text=gettext_lazy(
            "The short description used in prompts, in the language of the corpora it runs on, e.g. 'heart rate'"
        ),
    )
    slug = forms.CharField(
        max_length=MAX_SLUG_LENGTH,
        required=False,
        label=gettext_lazy("Slug"),
        help_text=gettext_lazy("Stable id: lower-case letters, digits and hyphens; empty: made from the description"),
    )
    options = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        label=gettext_lazy("Label options"),
        help_text=format_lazy(
            gettext_lazy("One per line, at least {count}, in the order prompts list them"), count=MIN_OPTIONS
        ),
    )
    group = forms.CharField(
        max_length=100,
        required=False,
        label=gettext_lazy("Group"),
        help_text=gettext_lazy("Clinical group, e.g. 'vital signs'"),
    )
    held_out = forms.BooleanField(
        required=False,
        label=gettext_lazy("Held out"),
        help_text=gettext_lazy("Kept out of training, evaluated separately"),
    )
    guideline = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        required=False,
        label=gettext_lazy("Evidence guideline"),
        help_text=gettext_lazy(
            "What counts as evidence for this task, shown to reviewers: Markdown (**bold**, _italic_, `code`, "
            "lists, ### headings, https links), with its line breaks; each change is a new version"
        ),
    )

    def __init__(self, *args, user, task: Task | None = None, **kwargs):
        self.task = task
        if task is not None:
            kwargs.setdefault(
                "initial",
                {
                    "description": task.description,
                    "slug": task.slug,
                    "options": "\n".join(task.options),
                    "group": task.group,
                    "held_out": task.held_out,
                    "guideline": task.guideline,
                },
            )
        super().__init__(*args, **kwargs)
        if task is None:
            self.fields["project"].queryset = Project.objects.where(user, Capability.MANAGE_TASKS)
        else:
            del self.fields["project"]  # a task stays in its project (or in the shared catalog)
            self.fields["slug"].disabled = True  # jobs, splits and exports name tasks by slug
            self.fields["slug"].help_text = _("Stable id: it cannot change")
            for name in ("description", "options", "group", "held_out"):
                if name not in editable_fields(task):
                    self.fields[name].disabled = True
                    self.fields[name].help_text = _("From the task catalog: change it in the catalog file")

    def _others(self):
        tasks = manageable_tasks()
        return tasks.exclude(pk=self.task.pk) if self.task is not None else tasks

    clean_project = only_choice_when_blank("project")

    def clean_description(self):
        description = _normal(self.cleaned_data["description"], "description")
        if not description:
            raise forms.ValidationError(_("Write the description."))
        if self._others().filter(description__iexact=description).exists():
            raise forms.ValidationError(
                _("A task already has the description %(description)s.") % {"description": repr(description)}
            )
        return description

    def clean_slug(self):
        if self.task is not None:
            return self.task.slug
        slug = _normal(self.cleaned_data["slug"], "slug")
        if slug and not SLUG_RE.match(slug):
            raise forms.ValidationError(_("Use lower-case letters, digits and single hyphens, e.g. 'heart-rate'."))
        return slug

    def clean_options(self):
        lines = [line for line in self.cleaned_data["options"].splitlines() if line.strip()]
        if len(lines) > settings.TASK_MAX_OPTIONS:
            raise forms.ValidationError(
                _("A task has at most %(most)s label options (TASK_MAX_OPTIONS); this list has %(count)s.")
                % {"most": _count(settings.TASK_MAX_OPTIONS), "count": _count(len(lines))}
            )
        options, seen = [], set()
        for line in lines:
            option = _normal(line, "option")
            if not option:
                continue
            if len(option) > MAX_LABEL_LENGTH:
                shown = option[:40]
                raise forms.ValidationError(
                    _("The option %(option)s… is longer than %(most)s characters.")
                    % {"option": repr(shown), "most": MAX_LABEL_LENGTH}
                )
            if option.casefold() in seen:
                raise forms.ValidationError(_("The option %(option)s is listed twice.") % {"option": repr(option)})
            seen.add(option.casefold())
            options.append(option)
        if len(options) < MIN_OPTIONS:
            raise forms.ValidationError(
                _("Give at least %(least)s label options, one per line.") % {"least": MIN_OPTIONS}
            )
        return options

    def clean_group(self):
        return _normal(self.cleaned_data["group"], "group")

    def clean_guideline(self):
        guideline = unicodedata.normalize("NFC", self.cleaned_data["guideline"]).strip()
        if len(guideline) > settings.TASK_MAX_GUIDELINE_CHARS:
            raise forms.ValidationError(
                _("A guideline has at most %(most)s characters (TASK_MAX_GUIDELINE_CHARS); this one has %(count)s.")
                % {"most": _count(settings.TASK_MAX_GUIDELINE_CHARS), "count": _count(len(guideline))}
            )
        return guideline

    def clean(self):
        data = super().clean()
        if self.task is None and data.get("description") and not data.get("slug") and "slug" not in self.errors:
            data["slug"] = slugify(data["description"])
            if not data["slug"]:
                self.add_error("slug", _("The description gives no slug: write one."))
        if self.task is None and data.get("slug") and self._others().filter(slug=data["slug"]).exists():
            self.add_error("slug", _("A task already has the slug %(slug)s.") % {"slug": repr(data["slug"])})
        return data
