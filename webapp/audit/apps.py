from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "webapp.audit"
    label = "audit"

    def ready(self):
        from webapp.audit import signals  # noqa: F401 - connects the login receivers
