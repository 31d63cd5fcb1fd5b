from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ReviewConfig(AppConfig):
    name = "webapp.review"
    label = "review"
    verbose_name = _("Peak review")

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from webapp.corpus.models import ProjectTaskState, Task
        from webapp.evaluation.gold_sources import GoldSource, gold_from
        from webapp.evaluation.models import RelevanceEvaluation
        from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob
        from webapp.review import catalog, gold

        # the localisation evaluation scores against the gold made here too (evaluation imports no review)
        gold_from(GoldSource("review", gold.pairs_of, gold.evidence))

        # A change made in this process clears its copy of the review menus at once.
        for model in (ModelVersion, Task, ProjectTaskState, PeakProfile, RelevanceJob, RelevanceEvaluation):
            for signal in (post_save, post_delete):
                signal.connect(catalog.clear, sender=model, dispatch_uid=f"review-catalog-{model.__name__}")
