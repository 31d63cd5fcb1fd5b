from django import forms
from django.utils.translation import gettext_lazy as _

from webapp.api.models import ApiToken
from webapp.api.tokens import MAX_DAYS
from webapp.integrations import delivery_text, webhooks
from webapp.integrations.models import Webhook
from webapp.lib.outbound import OutboundRefused


class TokenForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100, help_text=_("What it is for, e.g. 'nightly import script'"))
    projects = forms.ModelMultipleChoiceField(
        queryset=None,
        widget=forms.CheckboxSelectMultiple,
        label=_("Projects"),
        help_text=_("It acts in these projects only"),
    )
    ceiling = forms.ChoiceField(choices=ApiToken.Ceiling.choices, initial=ApiToken.Ceiling.READ, label=_("May"))
    days = forms.IntegerField(min_value=1, max_value=MAX_DAYS, initial=90, label=_("Expires after (days)"))

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["projects"].queryset = projects


class WebhookForm(forms.Form):
    url = forms.URLField(
        max_length=500,
        assume_scheme="https",
        label="URL",
        help_text=_("Receives a POST with a JSON body per event; http or https to a public address"),
    )
    secret = forms.CharField(
        label=_("Secret"), max_length=100, min_length=16, help_text=_("At least 16 characters; signs each body")
    )
    events = forms.MultipleChoiceField(
        choices=[c for c in Webhook.Event.choices if c[0] != Webhook.Event.TEST],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label=_("Events"),
        help_text=_("None ticked: every event"),
    )

    def clean_url(self):
        """The outbound policy, checked now (and again before every delivery); its refusal in the
        reader's language."""
        url = self.cleaned_data["url"]
        try:
            webhooks.check_url(url)
        except OutboundRefused as exc:
            raise forms.ValidationError(delivery_text.shown(str(exc)), code="outbound") from None
        return url
