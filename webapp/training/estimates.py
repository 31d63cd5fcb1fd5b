"""The estimate of a training run, before it is launched (webapp.lifecycle.estimates)."""

from __future__ import annotations

from ml.training.schedule import plan_steps
from webapp.lifecycle import queue
from webapp.lifecycle.estimates import RATE_SAMPLE, Estimate, elapsed, from_rate
from webapp.lifecycle.status import JobStatus
from webapp.training import configs
from webapp.training.models import CAUSAL_KINDS, TrainingRun
from webapp.training.runs import RUN_TASK


# optimizer steps, as ml.training.loop counts them; rate = steps / wall time of earlier finished
# runs of the same kind and model. Kinds without optimizer steps of that kind (heads, prompting)
# get no estimate.
def training_run(spec) -> Estimate | None:
    config, problems = spec.full_config()
    train = config.get("train") or {}
    if problems or "effective_batch_size" not in train:
        return None
    if spec.kind in CAUSAL_KINDS:
        examples = spec.dataset.examples.count() if spec.dataset is not None else 0
    else:
        examples = spec.split.train_count if spec.split is not None else 0
    if not examples:
        return None
    # the trainer's own arithmetic (ml.training.schedule), so the estimate counts what it will run
    steps = plan_steps(configs.section_classes(spec.kind)["train"].from_dict(train), examples).total
    earlier = (
        TrainingRun.objects.filter(
            model_version=spec.model_version, kind=spec.kind, status=JobStatus.DONE, total_steps__gt=0
        )
        .order_by("-finished")
        .values_list("total_steps", "started", "finished")[:RATE_SAMPLE]
    )
    return from_rate(steps, "steps", elapsed(earlier), work=f"{spec.kind} run", queue_name=queue.queue_of(RUN_TASK))
