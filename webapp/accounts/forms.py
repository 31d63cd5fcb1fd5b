from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from webapp.accounts.local_users import ONE_TIME_PASSWORD, SET_PASSWORD_LINK
from webapp.projects.roles import ROLE_NAMES, Role


class LocalUserForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150, validators=[UnicodeUsernameValidator()])
    first_name = forms.CharField(label=_("First name"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name"), max_length=150, required=False)
    email = forms.EmailField(label=_("Email"), required=False)
    way = forms.ChoiceField(
        label=_("How they get in"),
        choices=[
            (SET_PASSWORD_LINK, _("A set-password link (shown once; works until used, or for a few days)")),
            (ONE_TIME_PASSWORD, _("A one-time password (shown once)")),
        ],
        initial=SET_PASSWORD_LINK,
        widget=forms.RadioSelect,
    )

    def clean_username(self):
        username = self.cleaned_data["username"]
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise forms.ValidationError(gettext("An account already has this username."))
        return username


class ProjectForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    slug = forms.SlugField(
        label=_("Slug"),
        max_length=100,
        required=False,
        help_text=_("Stable short name for settings and commands; empty: from the name"),
    )
    description = forms.CharField(
        label=_("Description"),
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text=_("The ward or study, and its approval"),
    )


class MemberForm(forms.Form):
    username = forms.CharField(
        label=_("Username"),
        max_length=150,
        help_text=_("An existing account (identity-provider users exist after their first sign-in)"),
    )
    role = forms.ChoiceField(label=_("Role"), choices=[(role.value, ROLE_NAMES[role]) for role in Role])

    def clean_username(self):
        user = get_user_model().objects.filter(username=self.cleaned_data["username"], is_active=True).first()
        if user is None:
            raise forms.ValidationError(gettext("No active account has this username."))
        return user
