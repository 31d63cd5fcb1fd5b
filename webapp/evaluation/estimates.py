"""The estimate of an evaluation, before it is launched (webapp.lifecycle.estimates).

Maps: pairs (at most max_pairs) x configurations prompts, at the seconds per prompt earlier
evaluations of the model measured. Faithfulness adds ml.faithfulness.PASSES_PER_PAIR forward
passes per pair and configuration (no backward), at the seconds per pass earlier evaluations
measured; the size says both, and the time is given only when both rates are measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from ml.faithfulness import PASSES_PER_PAIR
from webapp.evaluation.evaluations import RUN_TASK, n_planned
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import queue
from webapp.lifecycle.estimates import RATE_SAMPLE, Estimate, from_rate


@dataclass(frozen=True)
class EvaluationEstimate(Estimate):
    prompts: int = 0
    passes: int = 0  # faithfulness forward passes

    @property
    def size(self) -> str:
        if not self.passes:
            return f"{self.prompts:,} prompts"
        return (
            f"{self.prompts:,} prompts + {self.passes:,} forward passes for faithfulness "
            f"({PASSES_PER_PAIR} a pair and configuration)"
        )


def evaluation(spec) -> Estimate:
    pairs = n_planned(spec)
    configs = len(set(spec.methods)) * len(set(spec.explains))
    prompts = pairs * configs
    passes = prompts * PASSES_PER_PAIR if spec.faithfulness else 0
    earlier = RelevanceEvaluation.objects.filter(model_version=spec.model_version).order_by("-pk")
    maps = from_rate(
        prompts,
        "prompts",
        [
            (done, done * spp)
            for done, spp in earlier.filter(done__gt=0, seconds_per_prompt__gt=0).values_list(
                "done", "seconds_per_prompt"
            )[:RATE_SAMPLE]
        ],
        work="evaluation",
        queue_name=queue.queue_of(RUN_TASK),
    )
    seconds, basis = maps.seconds, maps.basis
    if passes:
        rates = list(earlier.filter(seconds_per_pass__gt=0).values_list("seconds_per_pass", flat=True)[:RATE_SAMPLE])
        if rates and seconds is not None:
            per_pass = sum(rates) / len(rates)
            seconds += passes * per_pass
            basis += f"; forward passes at {per_pass:.3g} s each, measured on {len(rates)} earlier evaluation(s)"
        else:
            seconds = None
            basis += "; no measured rate yet for faithfulness forward passes of this model"
    unit = "prompts and forward passes" if passes else "prompts"
    return EvaluationEstimate(prompts + passes, unit, seconds, basis, maps.queue, prompts=prompts, passes=passes)
