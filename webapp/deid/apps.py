from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DeidConfig(AppConfig):
    name = "webapp.deid"
    label = "deid"
    verbose_name = _("De-identification")
