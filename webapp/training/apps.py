from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TrainingConfig(AppConfig):
    name = "webapp.training"
    label = "training"
    verbose_name = _("Training runs")

    def ready(self):
        # a run of corpora that are not de-identified leaves nothing in MLflow unless an admin confirmed it
        from webapp.integrations.mlflow_log import hold_back_when
        from webapp.training.runs import mlflow_refusal

        hold_back_when(mlflow_refusal)
