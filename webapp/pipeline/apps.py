from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PipelineConfig(AppConfig):
    name = "webapp.pipeline"
    label = "pipeline"
    verbose_name = _("Models, peak profiles and relevance")
