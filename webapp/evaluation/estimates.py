"""The estimate of an evaluation, before it is launched (webapp.lifecycle.estimates)."""

from __future__ import annotations

from webapp.corpus.models import Annotation
from webapp.evaluation.evaluations import RUN_TASK
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import queue
from webapp.lifecycle.estimates import RATE_SAMPLE, Estimate, from_rate


# prompts = annotated pairs (at most max_pairs) x configurations; rate = the seconds per prompt
# earlier evaluations of the model measured.
def evaluation(spec) -> Estimate:
    annotated = Annotation.objects.filter(note__corpus=spec.corpus).exclude(evidence=[])
    if spec.tasks:
        annotated = annotated.filter(task__in=list(spec.tasks))
    pairs = annotated.values("note_id", "task_id").distinct().count()
    if spec.max_pairs is not None:
        pairs = min(pairs, spec.max_pairs)
    configs = len(set(spec.methods)) * len(set(spec.explains))
    earlier = (
        RelevanceEvaluation.objects.filter(model_version=spec.model_version, done__gt=0, seconds_per_prompt__gt=0)
        .order_by("-pk")
        .values_list("done", "seconds_per_prompt")[:RATE_SAMPLE]
    )
    return from_rate(
        pairs * configs,
        "prompts",
        [(done, done * spp) for done, spp in earlier],
        work="evaluation",
        queue_name=queue.queue_of(RUN_TASK),
    )
