"""Fetch training runs for views: 403 for what the role may not do, 404 for what does not exist."""

from django.shortcuts import get_object_or_404

from webapp.accounts.roles import Capability, require
from webapp.training.models import TrainingRun

RELATED = ("model_version", "dataset", "split__corpus", "produced_model", "created_by")


def run_for(user, run_id: int, capability: Capability = Capability.VIEW) -> TrainingRun:
    require(user, capability)
    return get_object_or_404(TrainingRun.objects.select_related(*RELATED), pk=run_id)


def runs_for(user, run_ids) -> list[TrainingRun]:
    require(user, Capability.VIEW)
    ids = [int(i) for i in run_ids if str(i).isdigit()]
    return list(
        TrainingRun.objects.select_related(
            *RELATED, "model_version__parent", "model_version__produced_by_run__dataset"
        ).filter(pk__in=ids)
    )
