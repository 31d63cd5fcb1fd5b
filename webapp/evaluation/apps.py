from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class EvaluationConfig(AppConfig):
    name = "webapp.evaluation"
    label = "evaluation"
    verbose_name = _("Relevance evaluations")

    def ready(self):
        # the relevance job form preselects what the latest evaluation recommends
        from webapp.evaluation.recommendation import recommended_config
        from webapp.pipeline.launch_initial import suggest_with

        suggest_with(recommended_config)
