from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ReviewConfig(AppConfig):
    name = "webapp.review"
    label = "review"
    verbose_name = _("Peak review")

    def ready(self):
        from functools import partial

        from django.db.models.signals import post_delete, post_save

        from webapp.corpus.models import ProjectTaskState, Task, TaskGuideline
        from webapp.evaluation.gold_sources import GoldSource, gold_from
        from webapp.evaluation.models import RelevanceEvaluation
        from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob
        from webapp.projects.models import Project
        from webapp.review import caching, catalog, gold
        from webapp.review.models import ReviewRound

        # the localisation evaluation scores against the gold made here too (evaluation imports no review)
        gold_from(GoldSource("review", gold.pairs_of, gold.evidence, gold.has_gold, gold.pair_rows))

        # A change made in this process clears its copy of the review menus at once.
        for model in (ModelVersion, Task, ProjectTaskState, PeakProfile, RelevanceJob, RelevanceEvaluation):
            for signal in (post_save, post_delete):
                signal.connect(catalog.clear, sender=model, dispatch_uid=f"review-catalog-{model.__name__}")

        # What every review answer reads and webapp.review.caching keeps: read afresh after a change
        # (a task, project or model version saved too: a database made again reuses their ids).
        kept = [(TaskGuideline, "guideline"), (Task, "guideline"), (Project, "guideline")]
        kept += [(ReviewRound, "rounds"), (ModelVersion, "rounds")]
        for model, name in kept:
            for signal in (post_save, post_delete):
                signal.connect(partial(caching.renew, name), sender=model, weak=False,
                               dispatch_uid=f"review-caching-{model.__name__}-{signal is post_save}")  # fmt: skip
