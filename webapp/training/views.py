"""Training pages: runs list, launch form with presets, run page with live progress, charts, logs,
cancel / resume, predictions download, comparison tables (+ CSV) and the diff of two configurations.
A launch and a predictions download pass the gate (webapp.deid.gate): its refusal on the page, and the
project admin's checkbox."""

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.deid import gate
from webapp.integrations import mlflow_log
from webapp.lifecycle.estimates import waits_for_confirmation
from webapp.projects.roles import Capability, capability_required, require
from webapp.training import comparison, configs, estimates, evaluation, presets, runs
from webapp.training.access import run_for, runs_for
from webapp.training.charts import chart_data, latest
from webapp.training.forms import LaunchForm
from webapp.training.models import TrainingRun

RUNS_PER_PAGE = 200
LOG_LINES = 60


@capability_required(Capability.VIEW)
def run_list(request):
    rows = TrainingRun.objects.visible_to(request.user)
    rows = rows.select_related("model_version", "dataset", "split__corpus", "produced_model__erased_data")
    rows = rows[:RUNS_PER_PAGE]
    return render(request, "training/run_list.html", {"nav": "training", "runs": rows})


def run_new(request):
    require(request.user, Capability.LAUNCH)
    form = LaunchForm(
        request.POST or None,
        user=request.user,
        preset=request.GET.get("preset", "dsm-full"),
        model_version=request.GET.get("model"),
    )
    launching = request.method == "POST" and form.is_valid()
    estimate = estimates.training_run(form.spec()) if launching else None
    memory = estimates.memory_line(form.spec()) if launching else None
    if request.htmx:  # the live estimate as the fields change; never a launch
        return render(
            request,
            "training/run_form.html#estimate",
            {"estimate": estimate, "unestimated": launching, "memory": memory},
        )
    # large: the same form again, with the estimate and a confirm button
    ask = launching and waits_for_confirmation(estimate, request.POST)
    context = {
        "nav": "training",
        "form": form,
        "estimate": estimate,
        "memory": memory,
        "ask": ask,
        "unestimated": launching and estimate is None,
        "presets": presets.PRESETS.values(),
        "gate": gate.gate_for(form.spec().corpora(), request.user) if launching else None,
    }
    if launching and not ask:
        try:
            run = runs.launch(form.spec(), actor=request.user, confirm_identifiable=gate.confirmed(request.POST))
        except gate.Refused as exc:
            context["gate_refused"] = exc.reason
        except runs.RunError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("%(run)s is queued for the training workers.") % {"run": run.title})
            return redirect("training:run_detail", run.pk)
    return render(request, "training/run_form.html", context)


def run_detail(request, run_id):
    """The page, or (htmx poll) its live part; the poll ends (286) once the run has ended."""
    run = run_for(request.user, run_id)
    context = {
        "nav": "training",
        "run": run,
        "ended": not run.is_active,
        "stalled": run.is_stalled,
        "logs": _last_logs(run),
        "latest": latest(run),
        "gate": gate.gate_for(runs.run_corpora(run), request.user),
    }
    if not request.htmx:
        context["settings_rows"] = dict(sorted(configs.flatten(run.config).items()))
        logged = (run.provenance or {}).get("mlflow")
        context["mlflow"] = {
            "run_url": mlflow_log.run_url(logged),
            "model_url": mlflow_log.model_url(logged),
            "model": (logged or {}).get("registered_model"),
        }
        return render(request, "training/run_detail.html", context)
    fragment = render(request, "training/run_detail.html#live", context)
    return HttpResponseStopPolling(fragment.content) if context["ended"] else fragment


def run_metrics(request, run_id):
    run = run_for(request.user, run_id)
    return JsonResponse({"ended": not run.is_active, **chart_data(run)})


@require_POST
def run_cancel(request, run_id):
    run = run_for(request.user, run_id, Capability.LAUNCH)
    try:
        runs.cancel(run, actor=request.user)
    except runs.RunError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            _("Cancel requested: the worker saves a checkpoint and stops.")
            if run.status == "cancelling"
            else _("The run is cancelled."),
        )
    return redirect("training:run_detail", run.pk)


@require_POST
def run_resume(request, run_id):
    run = run_for(request.user, run_id, Capability.LAUNCH)
    try:
        runs.resume(run, actor=request.user)
    except runs.RunError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Resumed: the run continues from its last checkpoint."))
    return redirect("training:run_detail", run.pk)


def run_predictions(request, run_id, fmt):
    run = run_for(request.user, run_id)
    if fmt not in ("csv", "jsonl"):
        return HttpResponseBadRequest("Download predictions as csv or jsonl.")
    try:  # the notes' ids and labels
        confirm = gate.confirmed(request.GET)
        gate.release(runs.run_corpora(run), request.user, confirm, what="predictions download", obj=run, format=fmt)
    except gate.Refused as exc:
        messages.error(request, exc.reason)
        return redirect("training:run_detail", run.pk)
    stream = evaluation.stream_csv(run) if fmt == "csv" else evaluation.stream_jsonl(run)
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(stream, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-predictions.{fmt}"'
    return response


def compare(request):
    """Tables 2, 3 and 4 of the selected runs (?runs=1&runs=2...) and their paired differences
    against a reference run (?reference=ID; default: see comparison.reference_pairs); ?csv=2
    downloads one table (2, 3, 4 or paired)."""
    selected = runs_for(request.user, request.GET.getlist("runs"))
    rows = comparison.rows_of(selected)
    tables = comparison.tables(rows)
    reference = _int(request.GET.get("reference"))
    wanted = request.GET.get("csv")
    if wanted:
        if wanted == "paired":
            table = comparison.paired_table(comparison.paired_rows(rows, reference))
        elif wanted in tables:
            table = tables[wanted]
        else:
            return HttpResponseBadRequest("Download table 2, 3, 4 or paired.")
        response = HttpResponse(table.to_csv(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="table-{wanted}.csv"'
        return response
    skipped = [run for run in selected if comparison.row_of(run) is None]
    paired = comparison.paired_rows(rows, reference)
    return render(
        request,
        "training/compare.html",
        {
            "nav": "training",
            "selected": selected,
            "tables": tables,
            "skipped": skipped,
            "paired": paired,
            "paired_table": comparison.paired_table(paired),
            "reference": reference,
            "references": comparison.systems(rows),
            "query": request.GET.urlencode(),
        },
    )


def diff(request):
    """The configurations of two runs side by side, only what differs (?a=1&b=2, or the first
    two of ?runs=)."""
    ids = [_int(request.GET.get("a")), _int(request.GET.get("b"))]
    left_out = []
    if None in ids:
        chosen = [_int(value) for value in request.GET.getlist("runs")]
        ids, left_out = chosen[:2], [i for i in chosen[2:] if i]
    by_id = {run.pk: run for run in runs_for(request.user, [i for i in ids + left_out if i])}
    a, b = (by_id.get(i) for i in (ids + [None, None])[:2])
    if a is None or b is None:
        return HttpResponseBadRequest(_("Choose two runs to compare."))
    return render(
        request,
        "training/diff.html",
        {
            "nav": "training",
            "a": a,
            "b": b,
            "differences": comparison.config_diff(a, b),
            # a diff is of two runs: say which selected runs it leaves out rather than drop them silently
            "left_out": [by_id[i] for i in left_out if i in by_id],
        },
    )


def _last_logs(run):
    return list(reversed(run.logs.order_by("-id")[:LOG_LINES]))


def _int(value):
    return int(value) if value and str(value).isdigit() else None
