from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IntegrationsConfig(AppConfig):
    name = "webapp.integrations"
    label = "integrations"
    verbose_name = _("Webhooks and MLflow tracking")

    def ready(self):
        from webapp.integrations import events

        events.connect()
