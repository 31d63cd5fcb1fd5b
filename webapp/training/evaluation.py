"""Evaluate a run's test predictions and keep them: per-task F1, Macro F1 with its 95% bootstrap
CI, held-out tasks separately (ml.training.evaluate), predictions as RunPrediction rows.

Stored on the run (`TrainingRun.results`, plus the summary columns used by lists and tables):

    {"macro_f1": {"estimate": .., "low": .., "high": ..},     # over the tasks that are not held out
     "per_task": {slug: f1},                                   # every task, held-out ones included
     "held_out": {"macro_f1": {...} | None, "tasks": [slugs]},
     "n_test": int, "n_resamples": int,
     "variants": [{"macro_f1": {"estimate": ..}}, ...],        # prompting: each variant's Macro F1;
                                                               # the top level is their mean
     "ml": EvalResult.to_dict()}                               # as ml.training reported it
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

from webapp.corpus.models import Note, Task
from webapp.lib import csv_export
from webapp.training import log_text, splits
from webapp.training.models import RunPrediction, TrainingRun

WRITE_BATCH = 5_000
EXPORT_FIELDS = ("note", "task", "variant", "gold", "predicted")


def evaluate_and_store(run: TrainingRun, items: list, predictions: list[list[str]], reporter) -> dict:
    """Evaluate the prediction lists (several, one per variant, are averaged with one CI from
    the same item resamples), store every prediction, return the fields to save on the run."""
    from ml.training import average_variants, evaluate

    options = run.config.get("evaluation", {})
    n_resamples, seed = options.get("n_resamples", 1000), options.get("seed", 0)
    held_out = splits.held_out_tasks(run.split)
    # two steps of its own (the scores with their bootstrap, then the stored predictions), so the
    # run's page shows this phase's progress rather than the last phase's 100%
    reporter.set_phase("evaluate", label="evaluating on the test items", total_steps=2)
    if len(predictions) == 1:
        result = evaluate(items, predictions[0], held_out=held_out, n_resamples=n_resamples, seed=seed)
    else:
        result = average_variants(items, predictions, held_out=held_out, n_resamples=n_resamples, seed=seed)
    summary = summarise(result, held_out)
    summary.update(n_test=len(items), n_resamples=n_resamples, ml=_jsonable(result.to_dict()))
    reporter.count(1, 2)
    store_predictions(run, items, predictions)
    reporter.count(2, 2)
    macro = summary["macro_f1"] or {}
    held = summary["held_out"]["macro_f1"] or {}
    figures = {"f1": _pct(macro.get("estimate")), "low": _pct(macro.get("low")), "high": _pct(macro.get("high"))}
    if held:
        reporter.log(log_text.MACRO_F1_HELD.format(**figures, items=len(items), held=_pct(held.get("estimate"))))
    else:
        reporter.log(log_text.MACRO_F1.format(**figures, items=len(items)))
    return {
        "results": summary,
        "macro_f1": macro.get("estimate"),
        "macro_f1_low": macro.get("low"),
        "macro_f1_high": macro.get("high"),
        "held_out_macro_f1": held.get("estimate"),
    }


def summarise(result, held_out: set[str]) -> dict:
    """Our stored shape (see the module doc) from an ml.training.EvalResult."""
    held = result.held_out
    summary = {
        "macro_f1": _ci(result),
        "per_task": {task: _f(value) for task, value in sorted(result.per_task.items())},
        "held_out": {
            "macro_f1": _ci(held) if held is not None else None,
            "tasks": sorted(held_out & set(result.per_task)),
        },
    }
    if result.variants:
        summary["variants"] = [{"macro_f1": {"estimate": _f(v), "low": None, "high": None}} for v in result.variants]
    return summary


def store_predictions(run: TrainingRun, items: list, predictions: list[list[str]]) -> int:
    """Replace the run's predictions (a run evaluated again keeps one set)."""
    RunPrediction.objects.filter(run=run).delete()
    notes = dict(
        Note.objects.filter(corpus=run.split.corpus, external_id__in={i.note_id for i in items}).values_list(
            "external_id", "pk"
        )
    )
    tasks = dict(Task.objects.filter(slug__in={i.task for i in items}).values_list("slug", "pk"))
    rows = [
        RunPrediction(
            run=run,
            note_id=notes[item.note_id],
            task_id=tasks[item.task],
            variant=variant,
            gold=item.label,
            predicted=str(predicted)[:200],
        )
        for variant, values in enumerate(predictions)
        for item, predicted in zip(items, values, strict=True)
    ]
    RunPrediction.objects.bulk_create(rows, batch_size=WRITE_BATCH)
    return len(rows)


def prediction_rows(run: TrainingRun) -> Iterator[dict]:
    rows = (
        RunPrediction.objects.filter(run=run)
        .order_by("variant", "note__external_id", "task__slug")
        .values_list("note__external_id", "task__slug", "variant", "gold", "predicted")
    )
    for values in rows.iterator(chunk_size=WRITE_BATCH):
        yield dict(zip(EXPORT_FIELDS, values))


def stream_csv(run: TrainingRun) -> Iterator[str]:
    return csv_export.csv_chunks(EXPORT_FIELDS, (row.values() for row in prediction_rows(run)))


def stream_jsonl(run: TrainingRun) -> Iterator[str]:
    for row in prediction_rows(run):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def _ci(result) -> dict | None:
    """{"estimate", "low", "high"} of an EvalResult's Macro F1; None when it has no items."""
    estimate = _f(result.macro_f1)
    if estimate is None:
        return None
    return {"estimate": estimate, "low": _f(result.ci_low), "high": _f(result.ci_high)}


def _f(value):
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _pct(value) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _jsonable(value):
    return json.loads(json.dumps(value, default=lambda o: o._asdict() if hasattr(o, "_asdict") else str(o)))
