"""Fetch training runs for views through the access layer (webapp.projects.scoping): 404 for what
does not exist or belongs to another project, 403 for what the role may not do."""

from webapp.projects.roles import Capability, require
from webapp.projects.scoping import get_or_404
from webapp.training.models import TrainingRun

RELATED = ("model_version", "dataset__corpus", "split__corpus", "produced_model", "created_by")


def run_for(user, run_id: int, capability: Capability = Capability.VIEW) -> TrainingRun:
    return get_or_404(user, TrainingRun.objects.select_related(*RELATED), capability, pk=run_id)


def runs_for(user, run_ids) -> list[TrainingRun]:
    """The runs among `run_ids` the user may see (others are left out, as if they did not exist)."""
    require(user, Capability.VIEW)
    ids = [int(i) for i in run_ids if str(i).isdigit()]
    related = (*RELATED, "model_version__parent", "model_version__produced_by_run__dataset")
    return list(TrainingRun.objects.visible_to(user).select_related(*related).filter(pk__in=ids))
