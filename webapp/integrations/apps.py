from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    name = "webapp.integrations"
    label = "integrations"
    verbose_name = "Webhooks and MLflow tracking"

    def ready(self):
        from webapp.integrations import events

        events.connect()
