"""Personal API tokens. (A project's webhooks are an integration: webapp.integrations.models.)

A token is stored as the SHA-256 of its secret (the secret is shown once, when it is made); it acts
as its owner, limited to the projects it names (a subset of the owner's at creation; a project the
owner later leaves is out of reach too, since the access layer reads the owner's memberships) and
to its ceiling: `read` tokens may only GET. Its rate window is counted in the cache when the cache
is shared by the web processes (Redis), else on the row (`window_start`, `window_count`), so every
process counts the same requests either way (webapp.api.tokens.count_request).
"""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class ApiToken(models.Model):
    class Ceiling(models.TextChoices):
        READ = "read", _("Read only (GET requests)")
        ROLES = "roles", _("The owner's roles in each project")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text=_("What the token is for, e.g. 'nightly import script'"))
    prefix = models.CharField(max_length=12, help_text=_("The secret's first characters, to recognise it in lists"))
    digest = models.CharField(max_length=64, unique=True, help_text=_("SHA-256 of the secret (hex)"))
    projects = models.ManyToManyField("projects.Project", related_name="+")
    ceiling = models.CharField(max_length=5, choices=Ceiling.choices, default=Ceiling.READ)
    expires = models.DateTimeField()
    revoked = models.DateTimeField(null=True, blank=True)
    last_used = models.DateTimeField(null=True, blank=True)
    window_start = models.BigIntegerField(default=0, help_text=_("the current rate window (unix minute)"))
    window_count = models.PositiveIntegerField(default=0, help_text=_("requests in the current rate window"))
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now=None) -> bool:
        return self.revoked is None and self.expires > (now or timezone.now())

    def state(self) -> str:
        if self.revoked:
            return "revoked"
        return "expired" if self.expires <= timezone.now() else "active"
