from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "webapp.api"
    label = "api"
    verbose_name = "REST API, tokens and webhooks"

    def ready(self):
        from webapp.api import events

        events.connect()
