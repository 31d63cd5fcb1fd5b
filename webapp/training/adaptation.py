"""Downstream adaptation on a LabeledSplit, each evaluated on its test items: one multi-task
LoRA SFT model, classification heads on the frozen model's features (CH), 0-shot / 2-shot
prompting, and the synthetic-label self-learning baseline."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from webapp.training import evaluation, log_text, runs, runtime, splits
from webapp.training.models import SplitItem, TrainingRun
from webapp.training.reporting import Reporter


def _split_items(run: TrainingRun, reporter: Reporter):
    train = splits.labeled_items(run.split, SplitItem.Part.TRAIN)
    test = splits.labeled_items(run.split, SplitItem.Part.TEST)
    reporter.log(
        log_text.SPLIT.format(split=run.split_id, train=len(train), test=len(test), tasks=len(run.split.tasks))
    )
    return train, test


def _train_sft(run, reporter, items, phase: str, label: str, folder: str):
    from ml.training import train_sft

    loaded = runtime.load(run.model_version, training=True)
    mask = runtime.mask_token_for(loaded, run.config.get("sft", {}))
    reporter.set_phase(phase, label=label)
    result = train_sft(
        loaded,
        items,
        runtime.train_section(run),
        output_dir=str(Path(run.output_dir) / folder),
        mask_token=mask,
        on_progress=reporter.on_progress,
        should_stop=reporter.should_stop,
        resume=True,
    )
    del loaded
    runtime.release()
    runtime.require_learned(result)  # an unchanged model is neither evaluated nor registered
    return result, mask


def _max_length(run, loaded) -> int:
    """The train section's max_length as training resolved it (None: by the model and device)."""
    from ml.training.config import resolve_max_length

    return resolve_max_length(run.config["train"]["max_length"], loaded.model.config, loaded.device)


def _predict_sft(run, reporter, final_dir, items, mask: str) -> list[str]:
    from ml.training import predict_sft

    reporter.set_phase("predict", label="predicting the test items", total_steps=len(items))
    model = runtime.load(str(final_dir), training=False)
    predictions = predict_sft(
        model,
        items,
        mask_token=mask,
        batch_size=run.config.get("sft", {}).get("predict_batch_size", 8),
        max_length=_max_length(run, model),
    )
    reporter.count(len(items), len(items))
    del model
    runtime.release()
    return predictions


def run_sft(run: TrainingRun, reporter: Reporter) -> dict:
    train, test = _split_items(run, reporter)
    result, mask = _train_sft(run, reporter, train, "train", "LoRA SFT", "sft")
    if not runtime.is_main_process():
        return {}
    return _evaluate_and_register(run, reporter, result, test, mask, "sft")


def _evaluate_and_register(run, reporter, result, test, mask: str, variant: str) -> dict:
    """An SFT-trained model's test predictions evaluated and stored; the model registered."""
    runtime.checked(reporter)
    predictions = _predict_sft(run, reporter, result.final_dir, test, mask)
    fields = evaluation.evaluate_and_store(run, test, [predictions], reporter)
    fields["produced_model"] = runtime.register(run, result.final_dir, variant)
    fields["results"]["training"] = runtime.result_summary(result)
    return fields


def run_heads(run: TrainingRun, reporter: Reporter) -> dict:
    from ml.training import HeadConfig, extract_features, train_heads

    config = HeadConfig.from_dict(run.config["heads"])
    batch_size = run.config.get("features", {}).get("batch_size", 8)
    train, test = _split_items(run, reporter)
    reporter.set_phase(
        "features", label="computing features (cached per model and items)", total_steps=len(train) + len(test)
    )
    model = runtime.load(run.model_version, training=False)
    cache = runs.feature_cache_dir()
    started = time.perf_counter()
    # One call for both sides: a note's prefix is computed once for its train and test items.
    features = extract_features(
        model,
        train + test,
        cache_dir=cache,
        batch_size=batch_size,
        max_length=config.max_length,
        on_progress=reporter.count,
        should_stop=reporter.should_stop,
    )
    train_x, test_x = features[: len(train)], features[len(train) :]
    reporter.log(
        log_text.FEATURES
        % {
            "train": tuple(train_x.shape),
            "test": tuple(test_x.shape),
            "seconds": f"{time.perf_counter() - started:.1f}",
        }
    )
    del model
    runtime.release()
    runtime.checked(reporter)
    reporter.set_phase("heads", label="training the classification heads")
    bundle = train_heads(train_x, train, config, on_progress=reporter.on_progress, should_stop=reporter.should_stop)
    bundle.save(str(Path(run.output_dir) / "heads"))
    predictions = bundle.predict(test_x, test)
    return evaluation.evaluate_and_store(run, test, [predictions], reporter)


def run_prompting(run: TrainingRun, reporter: Reporter) -> dict:
    """Prompting, one task at a time (so Cancel takes effect between tasks); one prediction list
    per variant (3 system prompts for 0-shot, 3 draws of examples for 2-shot), averaged."""
    from ml.training import PromptingConfig, predict_prompting

    config = PromptingConfig.from_dict(run.config["prompting"])
    train, test = _split_items(run, reporter)
    tasks = sorted({item.task for item in test})
    reporter.set_phase("prompting", label=f"{config.shots}-shot prompting", total_steps=len(tasks))
    model = runtime.load(run.model_version, training=False)
    by_item: dict[str, list[str]] = {}
    for done, task in enumerate(tasks, 1):
        runtime.checked(reporter)
        items = [item for item in test if item.task == task]
        # the examples of a task are drawn per (seed, variant, task): asking task by task changes nothing
        variants = predict_prompting(model, items, config, train_items=train if config.shots else None)
        for index, item in enumerate(items):
            by_item[item.item_id] = [variant[index] for variant in variants]
        reporter.count(done, len(tasks))
    del model
    runtime.release()
    n_variants = len(next(iter(by_item.values()))) if by_item else 0
    predictions = [[by_item[item.item_id][v] for item in test] for v in range(n_variants)]
    return evaluation.evaluate_and_store(run, test, predictions, reporter)


def run_self_learning(run: TrainingRun, reporter: Reporter) -> dict:
    """Teacher SFT on the gold train items -> synthetic labels for unlabeled notes -> the base
    model trained (SFT) on gold + synthetic labels -> evaluated. Each stage's output is kept in
    the run's folder, so a resumed run skips the stages already finished."""
    from ml.training import self_label

    options = run.config["unlabeled"]
    train, test = _split_items(run, reporter)
    out = Path(run.output_dir)
    teacher_final = out / "teacher" / "final"
    if (teacher_final / "config.json").is_file():
        reporter.log(log_text.TEACHER_REUSED)
        mask = None  # read from the teacher below
    else:
        teacher, mask = _train_sft(run, reporter, train, "teacher", "training the SFT teacher", "teacher")
        teacher_final = Path(teacher.final_dir)
    runtime.checked(reporter)
    synthetic = _synthetic_items(run, reporter, teacher_final, mask, options, self_label)
    runtime.checked(reporter)
    student, mask = _train_sft(
        run, reporter, train + synthetic, "student", "training the student on gold + synthetic labels", "student"
    )
    if not runtime.is_main_process():
        return {}
    fields = _evaluate_and_register(run, reporter, student, test, mask, "self-learning")
    fields["results"]["synthetic_items"] = len(synthetic)
    return fields


def _synthetic_items(run, reporter, teacher_final, mask, options, self_label) -> list:
    """The teacher's labels for the unlabeled items, cached as {item_id: label} (labels only)."""
    from webapp.corpus.models import Corpus

    own = run.split.corpus
    corpus = Corpus.objects.get(name=options["corpus"], project_id=own.project_id) if options.get("corpus") else own
    unlabeled = splits.unlabeled_items(
        run.split, corpus=corpus, notes=options["notes"], tasks_per_note=options["tasks_per_note"], seed=options["seed"]
    )
    cache = Path(run.output_dir) / "synthetic_labels.json"
    if cache.is_file():
        labels = json.loads(cache.read_text())
        reporter.log(log_text.LABELS_REUSED.format(labels=len(labels)))
    else:
        reporter.set_phase("label", label="labelling unlabeled notes with the teacher", total_steps=len(unlabeled))
        teacher = runtime.load(str(teacher_final), training=False)
        mask = mask or runtime.mask_token_for(teacher, run.config.get("sft", {}))
        labelled = self_label(
            teacher,
            unlabeled,
            mask_token=mask,
            batch_size=run.config.get("sft", {}).get("predict_batch_size", 8),
            max_length=_max_length(run, teacher),
        )
        del teacher
        runtime.release()
        labels = {item.item_id: item.label for item in labelled}
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(labels))
        reporter.count(len(unlabeled), len(unlabeled))
    reporter.log(
        log_text.LABELS_MADE.format(labels=len(labels), notes=len({i.note_id for i in unlabeled}), corpus=corpus.name)
    )
    return [replace(item, label=labels[item.item_id]) for item in unlabeled if labels.get(item.item_id)]
