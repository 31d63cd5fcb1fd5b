from django.apps import AppConfig


class DeidConfig(AppConfig):
    name = "webapp.deid"
    label = "deid"
    verbose_name = "De-identification"
