"""The audit page's filters: one form for the list and its CSV export, so both show the same rows."""

import datetime

from django import forms
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from webapp.audit.models import AuditEvent
from webapp.projects.roles import Capability


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(
        choices=[("", gettext_lazy("any action")), *AuditEvent.Action.choices],
        required=False,
        label=gettext_lazy("Action"),
    )
    actor = forms.CharField(
        max_length=150,
        required=False,
        label=gettext_lazy("Actor"),
        help_text=gettext_lazy('username or its start, e.g. "cli:"'),
    )
    object_type = forms.CharField(
        max_length=60, required=False, label=gettext_lazy("Object type"), help_text=gettext_lazy("e.g. corpus.Corpus")
    )
    since = forms.DateField(required=False, label=gettext_lazy("From"), widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(
        required=False, label=gettext_lazy("To (inclusive)"), widget=forms.DateInput(attrs={"type": "date"})
    )
    before = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    FILTERS = ("action", "actor", "object_type", "since", "until")

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            raise forms.ValidationError(_("The end date is before the start date."))
        return data

    def events(self, user):
        """The matching events `user` may audit (their projects'; every row for a site admin),
        newest first (call after is_valid())."""
        data = self.cleaned_data
        return (
            AuditEvent.objects.visible_to(user, Capability.AUDIT)
            .matching(
                action=data["action"],
                actor=data["actor"].strip(),
                object_type=data["object_type"].strip(),
                since=_day_start(data["since"]),
                until=_day_start(data["until"] + datetime.timedelta(days=1))
                if data["until"] and data["until"] < datetime.date.max
                else None,
            )
            .order_by("-id")
        )

    def filters(self) -> dict:
        """The filters set, as text (for the export's own audit entry)."""
        return {name: str(self.cleaned_data[name]) for name in self.FILTERS if self.cleaned_data.get(name)}


def _day_start(day):
    """Midnight at the start of `day` in the site's time zone."""
    return timezone.make_aware(datetime.datetime.combine(day, datetime.time.min)) if day else None
