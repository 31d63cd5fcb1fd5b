"""The estimate of an evaluation, before it is launched (webapp.lifecycle.estimates).

Maps: pairs (at most max_pairs) x configurations prompts, at the seconds per prompt earlier
evaluations of the model measured. Faithfulness adds ml.faithfulness.PASSES_PER_PAIR forward
passes per pair and configuration (no backward), at the seconds per pass earlier evaluations
measured; the size says both, and the time is given only when both rates are measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ml.faithfulness import PASSES_PER_PAIR
from webapp.evaluation.evaluations import RUN_TASK, n_planned
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import queue
from webapp.lifecycle.estimates import RATE_SAMPLE, Estimate, amount_in_words, decimal, from_rate, grouped


@dataclass(frozen=True)
class EvaluationEstimate(Estimate):
    prompts: int = 0
    passes: int = 0  # faithfulness forward passes

    @property
    def size(self) -> str:
        prompts = amount_in_words(self.prompts, "prompts")
        if not self.passes:
            return prompts
        return ngettext(
            "%(prompts)s + %(passes)s forward passes for faithfulness (%(per_pair)s a pair and configuration)",
            "%(prompts)s + %(passes)s forward passes for faithfulness (%(per_pair)s a pair and configuration)",
            self.passes,
        ) % {"prompts": prompts, "passes": grouped(self.passes), "per_pair": PASSES_PER_PAIR}


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
            basis += ngettext(
                "; forward passes at %(seconds)s s each, measured on %(count)s earlier evaluation(s)",
                "; forward passes at %(seconds)s s each, measured on %(count)s earlier evaluation(s)",
                len(rates),
            ) % {"seconds": decimal(f"{per_pass:.3g}"), "count": len(rates)}
        else:
            seconds = None
            basis += _("; no measured rate yet for faithfulness forward passes of this model")
    unit = "prompts and forward passes" if passes else "prompts"
    return EvaluationEstimate(prompts + passes, unit, seconds, basis, maps.queue, prompts=prompts, passes=passes)
