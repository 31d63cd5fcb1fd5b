from django.conf import settings
from django.db import models
from django.utils.translation import gettext


class OIDCIdentity(models.Model):
    """The identity-provider account (issuer and subject) a user signs in with. A user found by
    this link, never by username or email, so no IdP account can take over a local one (the
    break-glass admin) by carrying its name."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique")]

    def __str__(self):
        return gettext("%(subject)s at %(issuer)s") % {"subject": self.subject, "issuer": self.issuer}


class PasswordChangeRequired(models.Model):
    """A local account made with a one-time password: its person must choose their own password
    at the first sign-in before anything else (webapp.accounts.password_change). The row goes once
    they have."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return gettext("user %(user)s must change the one-time password") % {"user": self.user_id}


def language_choices():
    """The interface's languages, read when asked (not frozen into a migration): adding one to
    settings.LANGUAGES needs no migration."""
    return settings.LANGUAGES


class Preference(models.Model):
    """A user's own settings. The interface language they chose in the menu (blank: none chosen),
    and apart from it the language their identity provider's `locale` claim named at their last
    sign-in, so a choice of their own is never overwritten by the provider
    (webapp.accounts.language)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference")
    language = models.CharField(max_length=16, blank=True, choices=language_choices)
    claimed_language = models.CharField(max_length=16, blank=True, choices=language_choices)

    def __str__(self):
        language = self.language or self.claimed_language
        if not language:
            return gettext("user %(user)s: no language") % {"user": self.user_id}
        return gettext("user %(user)s: %(language)s language") % {"user": self.user_id, "language": language}
