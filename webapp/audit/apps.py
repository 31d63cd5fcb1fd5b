from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AuditConfig(AppConfig):
    name = "webapp.audit"
    label = "audit"
    verbose_name = _("Audit log")

    def ready(self):
        from webapp.audit import signals  # noqa: F401 - connects the login receivers
