from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DeidOpsConfig(AppConfig):
    # No models of its own (de-identification jobs are webapp.deid's DeidJob); an app only so
    # that its template tags load.
    name = "webapp.deid_ops"
    label = "deid_ops"
    verbose_name = _("De-identification jobs and pages")
