"""Evaluation is stored per run; predictions are kept and downloadable."""

import json

from webapp.training import evaluation, runs, splits
from webapp.training.models import RunKind, RunPrediction, TrainingRun
from webapp.training.reporting import Reporter


def evaluated_run(corpus, model_version, variants=1):
    split, _ = splits.get_or_create_split(corpus)
    run = runs.launch(
        runs.RunSpec(
            kind=RunKind.PROMPTING if variants > 1 else RunKind.HEADS,
            model_version=model_version,
            split=split,
            config={"evaluation": {"n_resamples": 50}},
        )
    )
    run = runs.claim(run.pk)
    test = splits.labeled_items(split, "test")
    predictions = [[item.label for item in test]] + [[item.options[0] for item in test]] * (variants - 1)
    fields = evaluation.evaluate_and_store(run, test, predictions, Reporter(run))
    runs.finish(run, **fields)
    return TrainingRun.objects.get(pk=run.pk), test


def test_a_perfect_prediction_scores_one_and_held_out_tasks_are_apart(corpus, model_version):
    run, test = evaluated_run(corpus, model_version)
    assert run.macro_f1 == 1.0 and run.macro_f1_low == 1.0 and run.held_out_macro_f1 == 1.0
    assert run.results["held_out"]["tasks"] == ["spo2"]
    assert set(run.results["per_task"]) == {item.task for item in test}
    assert run.results["n_test"] == len(test) and "ml" in run.results
    assert RunPrediction.objects.filter(run=run).count() == len(test)


def test_variants_are_averaged_and_each_kept(corpus, model_version):
    run, test = evaluated_run(corpus, model_version, variants=3)
    assert len(run.results["variants"]) == 3
    estimates = [v["macro_f1"]["estimate"] for v in run.results["variants"]]
    assert abs(run.macro_f1 - sum(estimates) / 3) < 1e-9
    assert RunPrediction.objects.filter(run=run).count() == 3 * len(test)


def test_predictions_export_as_csv_and_jsonl_without_note_text(corpus, model_version):
    run, test = evaluated_run(corpus, model_version)
    csv_text = "".join(evaluation.stream_csv(run))
    lines = csv_text.splitlines()
    assert lines[0] == "note,task,variant,gold,predicted" and len(lines) == len(test) + 1
    rows = [json.loads(line) for line in evaluation.stream_jsonl(run)]
    first = min(test, key=lambda item: (item.note_id, item.task))
    assert rows[0] == {
        "note": first.note_id,
        "task": first.task,
        "variant": 0,
        "gold": first.label,
        "predicted": first.label,
    }
    assert not any(item.text[:30] in csv_text for item in test)


def test_evaluating_again_replaces_the_predictions(corpus, model_version):
    run, test = evaluated_run(corpus, model_version)
    evaluation.store_predictions(run, test, [[item.options[0] for item in test]])
    assert RunPrediction.objects.filter(run=run).count() == len(test)


def test_the_evaluate_phase_reports_its_own_steps(corpus, model_version):
    """Its page shows this phase's progress (issue 38: no phase without a bar of its own)."""

    class Watching(Reporter):
        seen = []

        def count(self, done, total):
            super().count(done, total)
            run = TrainingRun.objects.get(pk=self.run.pk)
            self.seen.append((run.phase, run.step, run.total_steps))

    split, _ = splits.get_or_create_split(corpus)
    run = runs.claim(runs.launch(runs.RunSpec(kind=RunKind.HEADS, model_version=model_version, split=split)).pk)
    test = splits.labeled_items(split, "test")
    evaluation.evaluate_and_store(run, test, [[item.label for item in test]], Watching(run))
    # the phase is shown with its own total from its start (step 1 is written when FLUSH_SECONDS passed)
    assert {(phase, total) for phase, _, total in Watching.seen} == {("evaluating on the test items", 2)}
    assert Watching.seen[-1][1] == 2
