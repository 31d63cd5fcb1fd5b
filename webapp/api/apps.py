from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ApiConfig(AppConfig):
    name = "webapp.api"
    label = "api"
    verbose_name = _("REST API and tokens")
