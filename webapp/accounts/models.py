from django.conf import settings
from django.db import models


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
        return f"{self.subject} at {self.issuer}"
