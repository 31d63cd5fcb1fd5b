"""Relevance evaluation pages: list, launch, detail with live progress and the result, cancel, resume."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.evaluation import estimates, evaluations, presentation
from webapp.evaluation.access import evaluation_for
from webapp.evaluation.forms import EvaluationForm
from webapp.evaluation.models import RelevanceEvaluation
from webapp.integrations import mlflow_log
from webapp.lifecycle.estimates import waits_for_confirmation
from webapp.projects.roles import Capability, capability_required, require

PER_PAGE = 100


@capability_required(Capability.VIEW)
def evaluation_list(request):
    rows = RelevanceEvaluation.objects.visible_to(request.user)
    rows = rows.select_related("corpus", "model_version").defer("pairs")[:PER_PAGE]
    return render(request, "evaluation/list.html", {"nav": "evaluation", "evaluations": rows})


def evaluation_new(request):
    require(request.user, Capability.LAUNCH)
    form = EvaluationForm(request.POST or None, user=request.user)
    launching = request.method == "POST" and form.is_valid()
    context = {"nav": "evaluation", "form": form, "estimate": estimates.evaluation(form.spec()) if launching else None}
    if request.htmx:  # the live estimate as the fields change; never a launch
        return render(request, "evaluation/new.html#estimate", context)
    if launching and waits_for_confirmation(context["estimate"], request.POST):
        context["ask"] = True  # large: the same form again, with the estimate and a confirm button
    elif launching:
        try:
            evaluation = evaluations.launch(form.spec(), actor=request.user)
        except evaluations.EvaluationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                _("Evaluation %(id)s queued: %(pairs)s pairs x %(configs)s configurations.")
                % {"id": evaluation.pk, "pairs": evaluation.n_pairs, "configs": len(evaluation.configs)},
            )
            return redirect("evaluation:detail", evaluation.pk)
    return render(request, "evaluation/new.html", context)


def evaluation_detail(request, evaluation_id):
    """The page, or (htmx poll) its live part; the poll ends (286) once the evaluation has ended."""
    evaluation = evaluation_for(request.user, evaluation_id)
    context = {
        "nav": "evaluation",
        "evaluation": evaluation,
        "ended": not evaluation.is_active,
        "stalled": evaluation.is_stalled,
    }
    if request.htmx:
        fragment = render(request, "evaluation/detail.html#live", context)
        # Once it has ended the whole page changes (the result appears): the fragment asks for a reload.
        if context["ended"]:
            response = HttpResponseStopPolling(fragment.content)
            response["HX-Refresh"] = "true"
            return response
        return fragment
    context.update(
        rows=presentation.rows(evaluation.result),
        charts=presentation.charts(evaluation.result),
        recommendation=evaluation.recommendation,
        faithfulness=presentation.faithfulness_rows(evaluation.result),
        specificity=presentation.specificity_rows(evaluation.result),
        mlflow_run_url=mlflow_log.run_url(evaluation.result.get("mlflow")),
    )
    return render(request, "evaluation/detail.html", context)


@require_POST
def evaluation_cancel(request, evaluation_id):
    evaluation = evaluation_for(request.user, evaluation_id, Capability.LAUNCH)
    try:
        evaluations.cancel(evaluation, actor=request.user)
    except evaluations.EvaluationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            _("Cancel requested: the worker stops after its current batch.")
            if evaluation.status == "cancelling"
            else _("The evaluation is cancelled."),
        )
    return redirect("evaluation:detail", evaluation.pk)


@require_POST
def evaluation_resume(request, evaluation_id):
    evaluation = evaluation_for(request.user, evaluation_id, Capability.LAUNCH)
    try:
        evaluations.resume(evaluation, actor=request.user)
    except evaluations.EvaluationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Resumed: maps already stored are kept; the worker computes the rest."))
    return redirect("evaluation:detail", evaluation.pk)
