"""Run a claimed training run: read its inputs, call ml.training, store what it produced.

One function per run kind; `execute(run)` picks it, turns ml.training's outcome into the run's
end state (done / cancelled / failed) and never raises for a run-level problem. Called by the
Celery task (workers.training), by `manage.py run_experiment` in-process, and by
`manage.py train_run` under `accelerate launch` / `torchrun` (every rank calls the trainer;
only rank 0 writes to the database, see `is_main_process`).

The process must never have been patched by lxt (AttnLRP relevance): training checks it first.
"""
from __future__ import annotations

import gc
import json
import logging
import os
import time
import traceback
from pathlib import Path

from django.conf import settings

from webapp.datasets.models import DatasetVersion, MaskedExample
from webapp.pipeline.models import ModelVersion
from webapp.training import evaluation, provenance, runs, splits
from webapp.training.models import RunKind, SplitItem, TrainingRun
from webapp.training.reporting import Reporter

log = logging.getLogger(__name__)

READ_BATCH = 2_000


class Cancelled(Exception):
    """Raised between the phases of a run when its cancel was requested."""


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def execute(run: TrainingRun, *, write: bool | None = None) -> str:
    """Run a claimed run to its end; returns its final status ("done", "cancelled", "failed")."""
    import ml.lrp
    from ml.training import TrainingCancelled, TrainingError

    write = is_main_process() if write is None else write
    reporter = Reporter(run, write=write)
    ml.lrp.assert_not_patched()
    if write:
        _record_environment(run, reporter)
    started = time.perf_counter()
    try:
        fields = _checked_run(run, reporter)
    except (TrainingCancelled, Cancelled) as exc:
        reporter.flush()
        if write:
            step = getattr(exc, "step", 0)
            if step:  # the trainer saved a checkpoint at this step
                TrainingRun.objects.filter(pk=run.pk, attempts=run.attempts).update(checkpoint_step=step)
                run.checkpoint_step = step
            runs.cancelled(run)
        return "cancelled"
    except TrainingError as exc:
        return _failed(run, reporter, exc, str(exc) or type(exc).__name__, write)
    except _MLRefusal as refusal:
        exc = refusal.__cause__
        return _failed(run, reporter, exc, f"ml.training refused the run: {str(exc)[:300]}", write)
    except Exception as exc:  # noqa: BLE001 - the run records it; the worker stays up
        message = (f"The run stopped because of an unexpected error ({type(exc).__name__}). The worker log has "
                   f"the details under run {run.pk}; Resume continues from the last checkpoint.")
        return _failed(run, reporter, exc, message, write)
    finally:
        gc.collect()
    reporter.flush()
    if not write:
        return "done"
    fields.setdefault("results", {})["seconds"] = round(time.perf_counter() - started, 2)
    if not runs.finish(run, **fields):
        return "cancelled"
    reporter.log(f"Done in {fields['results']['seconds']:.0f} s.")
    return "done"


class _MLRefusal(Exception):
    """A ValueError raised inside ml.training: about settings or data (ids, labels, sizes), never
    note text, so its message is shown on the run."""


def _checked_run(run: TrainingRun, reporter: Reporter) -> dict:
    try:
        return RUNNERS[run.kind](run, reporter)
    except ValueError as exc:
        if _raised_by_ml_training(exc):
            raise _MLRefusal() from exc
        raise


def _raised_by_ml_training(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    marker = os.sep + os.path.join("ml", "training") + os.sep
    return bool(frames) and marker in frames[-1].filename


def _failed(run, reporter, exc, message: str, write: bool) -> str:
    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("run %s failed (%s)\n%s", run.pk, type(exc).__name__, frames)  # no exception text: it may quote data
    reporter.flush()
    if write:
        runs.fail(run, message)
    return "failed"


def _record_environment(run: TrainingRun, reporter: Reporter) -> None:
    env = provenance.environment()
    history = list(run.provenance.get("attempts", [])) if run.provenance else []
    history.append({"attempt": run.attempts, "worker": run.worker, **env})
    first = history[0]
    TrainingRun.objects.filter(pk=run.pk).update(
        provenance={**first, "attempts": history}, code_version=first["code_version"][:64])
    if env["code_version"] != first["code_version"]:
        reporter.log(f"Note: this attempt runs code {env['code_version'][:12]}, the first ran "
                     f"{first['code_version'][:12]}.", level="warning")
    reporter.log(f"Code {env['code_version'][:12]}, torch {env['libraries']['torch']}, transformers "
                 f"{env['libraries']['transformers']}, device {env.get('device')}.")


# -------------------------------------------------------------------- model loading / registration


def load(model_version: ModelVersion | str, *, training: bool):
    """Load a model for training (fp32 master weights; precision is the trainer's business) or
    inference (the device's preferred dtype). Under torchrun each rank takes its own GPU."""
    import torch

    from ml.models import load_model, pick_device

    path = model_version.path if isinstance(model_version, ModelVersion) else str(model_version)
    local_rank = os.environ.get("LOCAL_RANK")
    device = torch.device(f"cuda:{local_rank}") if local_rank and torch.cuda.is_available() else pick_device()
    return load_model(path, model_dir=settings.MODEL_DIR, device=device,
                      dtype=torch.float32 if training else None)


def register(run: TrainingRun, final_dir, variant: str) -> ModelVersion:
    """The trained model as a ModelVersion (parent: the model it started from), usable at once
    for relevance jobs and further runs. Idempotent for a run."""
    base = run.model_version
    name = f"{base.name}+{variant}-run{run.pk}"[-200:]
    model, _ = ModelVersion.objects.get_or_create(
        name=name, defaults={"family": base.family, "path": str(final_dir), "parent": base,
                             "produced_by": f"training run {run.pk}"})
    return model


def mask_token_for(loaded, options: dict) -> str:
    """The SFT prompts' mask token: the configured one, else the model's (ml.training.mask_token_for)."""
    from ml.training import mask_token_for as model_mask_token

    return options.get("mask_token") or model_mask_token(loaded)


def _checked(reporter: Reporter) -> None:
    if reporter.should_stop():
        raise Cancelled


def _release() -> None:
    """Give back the memory of a model the caller has just dropped (`del loaded`)."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def _train_section(run: TrainingRun, name: str = "train"):
    from ml import training as ml_training

    cls = {RunKind.DSM: ml_training.CausalLMConfig, RunKind.CPT: ml_training.CausalLMConfig}.get(
        run.kind, ml_training.SFTConfig)
    return cls.from_dict(run.config[name])


def _result_summary(result) -> dict:
    return {"steps": result.steps, "tokens": result.tokens, "train_seconds": round(result.seconds, 2),
            "final_loss": result.final_loss}


# -------------------------------------------------------------------- DSM / CPT


def dataset_pairs(dataset: DatasetVersion, kind: str) -> list:
    """The dataset as ml.training.TextPair in a stable order. DSM: the masked examples with the
    paper's prompt (ml.masking.format_dsm_prompt). CPT: an unmasked dataset's examples, or the
    distinct notes of any other dataset's examples, as plain text (prompt "")."""
    from ml.masking import MaskedExample as Example
    from ml.masking import format_dsm_prompt
    from ml.training import TextPair

    examples = MaskedExample.objects.filter(dataset=dataset).order_by("pk")
    if kind == RunKind.CPT and dataset.mode != DatasetVersion.Mode.UNMASKED:
        note_ids = sorted(set(examples.values_list("note_id", flat=True)))
        from webapp.corpus.models import Note

        pairs = []
        for start in range(0, len(note_ids), READ_BATCH):
            texts = dict(Note.objects.filter(pk__in=note_ids[start:start + READ_BATCH]).values_list("pk", "text"))
            pairs.extend(TextPair(prompt="", answer=texts[pk]) for pk in note_ids[start:start + READ_BATCH])
        return pairs
    mode = DatasetVersion.Mode.UNMASKED.value if kind == RunKind.CPT else dataset.mode
    pairs = []
    for note_id, masked, label, start, end in examples.values_list(
            "note_id", "masked_text", "label", "char_start", "char_end").iterator(chunk_size=READ_BATCH):
        example = Example(note_id=str(note_id), tasks=(), masked_text=masked, label=label,
                          char_span=None if start is None else (start, end), mode=mode)
        prompt, answer = format_dsm_prompt(example)
        pairs.append(TextPair(prompt=prompt, answer=answer))
    return pairs


def run_causal(run: TrainingRun, reporter: Reporter) -> dict:
    from ml.training import train_causal_lm

    config = _train_section(run)
    reporter.set_phase("train", label="reading the dataset")
    pairs = dataset_pairs(run.dataset, run.kind)
    n_pairs = len(pairs)
    reporter.log(f"{n_pairs} training pairs from dataset {run.dataset} (mode {run.dataset.mode}).")
    _checked(reporter)
    loaded = load(run.model_version, training=True)
    reporter.set_phase("train", label="training")
    mask = run.dataset.mask_token if run.kind == RunKind.DSM else None  # made one special token
    result = train_causal_lm(loaded, pairs, config, output_dir=run.output_dir, on_progress=reporter.on_progress,
                             should_stop=reporter.should_stop, resume=True, mask_token=mask)
    del loaded, pairs
    _release()
    if not is_main_process():
        return {}
    variant = "cpt" if run.kind == RunKind.CPT else run.dataset.mode
    model = register(run, result.final_dir, variant)
    reporter.log(f"Registered model version {model.name}.")
    return {"produced_model": model, "results": {"training": _result_summary(result), "pairs": n_pairs}}


# -------------------------------------------------------------------- downstream adaptation


def _split_items(run: TrainingRun, reporter: Reporter):
    train = splits.labeled_items(run.split, SplitItem.Part.TRAIN)
    test = splits.labeled_items(run.split, SplitItem.Part.TEST)
    reporter.log(f"Split {run.split_id}: {len(train)} train and {len(test)} test items, "
                 f"{len(run.split.tasks)} tasks.")
    return train, test


def _train_sft(run, reporter, items, phase: str, label: str, folder: str):
    from ml.training import train_sft

    loaded = load(run.model_version, training=True)
    mask = mask_token_for(loaded, run.config.get("sft", {}))
    reporter.set_phase(phase, label=label)
    result = train_sft(loaded, items, _train_section(run), output_dir=str(Path(run.output_dir) / folder),
                       mask_token=mask, on_progress=reporter.on_progress, should_stop=reporter.should_stop,
                       resume=True)
    del loaded
    _release()
    return result, mask


def _predict_sft(run, reporter, final_dir, items, mask: str) -> list[str]:
    from ml.training import predict_sft

    reporter.set_phase("predict", label="predicting the test items", total_steps=len(items))
    model = load(str(final_dir), training=False)
    predictions = predict_sft(model, items, mask_token=mask,
                              batch_size=run.config.get("sft", {}).get("predict_batch_size", 8),
                              max_length=run.config["train"]["max_length"])
    reporter.count(len(items), len(items))
    del model
    _release()
    return predictions


def run_sft(run: TrainingRun, reporter: Reporter) -> dict:
    train, test = _split_items(run, reporter)
    result, mask = _train_sft(run, reporter, train, "train", "LoRA SFT", "sft")
    if not is_main_process():
        return {}
    _checked(reporter)
    predictions = _predict_sft(run, reporter, result.final_dir, test, mask)
    fields = evaluation.evaluate_and_store(run, test, [predictions], reporter)
    fields["produced_model"] = register(run, result.final_dir, "sft")
    fields["results"]["training"] = _result_summary(result)
    return fields


def run_heads(run: TrainingRun, reporter: Reporter) -> dict:
    from ml.training import HeadConfig, extract_features, train_heads

    config = HeadConfig.from_dict(run.config["heads"])
    batch_size = run.config.get("features", {}).get("batch_size", 8)
    train, test = _split_items(run, reporter)
    reporter.set_phase("features", label="computing features (cached per model and items)",
                       total_steps=len(train) + len(test))
    model = load(run.model_version, training=False)
    cache = runs.feature_cache_dir()
    started = time.perf_counter()
    train_x = extract_features(model, train, cache_dir=cache, batch_size=batch_size, max_length=config.max_length)
    reporter.count(len(train), len(train) + len(test))
    _checked(reporter)
    test_x = extract_features(model, test, cache_dir=cache, batch_size=batch_size, max_length=config.max_length)
    reporter.count(len(train) + len(test), len(train) + len(test))
    reporter.log(f"Features {tuple(train_x.shape)} + {tuple(test_x.shape)} in "
                 f"{time.perf_counter() - started:.1f} s (reused when cached).")
    del model
    _release()
    _checked(reporter)
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
    model = load(run.model_version, training=False)
    by_item: dict[str, list[str]] = {}
    for done, task in enumerate(tasks, 1):
        _checked(reporter)
        items = [item for item in test if item.task == task]
        # the examples of a task are drawn per (seed, variant, task): asking task by task changes nothing
        variants = predict_prompting(model, items, config, train_items=train if config.shots else None)
        for index, item in enumerate(items):
            by_item[item.item_id] = [variant[index] for variant in variants]
        reporter.count(done, len(tasks))
    del model
    _release()
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
        reporter.log("Teacher already trained: reusing it.")
        mask = None  # read from the teacher below
    else:
        teacher, mask = _train_sft(run, reporter, train, "teacher", "training the SFT teacher", "teacher")
        teacher_final = Path(teacher.final_dir)
    _checked(reporter)
    synthetic = _synthetic_items(run, reporter, teacher_final, mask, options, self_label)
    _checked(reporter)
    student, mask = _train_sft(run, reporter, train + synthetic, "student",
                               "training the student on gold + synthetic labels", "student")
    if not is_main_process():
        return {}
    _checked(reporter)
    predictions = _predict_sft(run, reporter, student.final_dir, test, mask)
    fields = evaluation.evaluate_and_store(run, test, [predictions], reporter)
    fields["produced_model"] = register(run, student.final_dir, "self-learning")
    fields["results"]["training"] = _result_summary(student)
    fields["results"]["synthetic_items"] = len(synthetic)
    return fields


def _synthetic_items(run, reporter, teacher_final, mask, options, self_label) -> list:
    """The teacher's labels for the unlabeled items, cached as {item_id: label} (labels only)."""
    from webapp.corpus.models import Corpus

    corpus = Corpus.objects.get(name=options["corpus"]) if options.get("corpus") else run.split.corpus
    unlabeled = splits.unlabeled_items(run.split, corpus=corpus, notes=options["notes"],
                                       tasks_per_note=options["tasks_per_note"], seed=options["seed"])
    cache = Path(run.output_dir) / "synthetic_labels.json"
    if cache.is_file():
        labels = json.loads(cache.read_text())
        reporter.log(f"Reusing {len(labels)} synthetic labels.")
    else:
        reporter.set_phase("label", label="labelling unlabeled notes with the teacher", total_steps=len(unlabeled))
        teacher = load(str(teacher_final), training=False)
        mask = mask or mask_token_for(teacher, run.config.get("sft", {}))
        labelled = self_label(teacher, unlabeled, mask_token=mask,
                              batch_size=run.config.get("sft", {}).get("predict_batch_size", 8),
                              max_length=run.config["train"]["max_length"])
        del teacher
        _release()
        labels = {item.item_id: item.label for item in labelled}
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(labels))
        reporter.count(len(unlabeled), len(unlabeled))
    reporter.log(f"{len(labels)} synthetic labels on {len({i.note_id for i in unlabeled})} unlabeled notes "
                 f"of corpus {corpus.name}.")
    from dataclasses import replace

    return [replace(item, label=labels[item.item_id]) for item in unlabeled if labels.get(item.item_id)]


RUNNERS = {
    RunKind.DSM: run_causal,
    RunKind.CPT: run_causal,
    RunKind.SFT: run_sft,
    RunKind.HEADS: run_heads,
    RunKind.PROMPTING: run_prompting,
    RunKind.SELF_LEARNING: run_self_learning,
}
