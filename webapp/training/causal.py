"""DSM-style training (kinds dsm and cpt): a DatasetVersion's examples -> ml.training.train_causal_lm
-> the trained model registered as a ModelVersion. Random-mask and one-peak ablations are kind
dsm on a dataset built in that mode; CPT trains on the same notes unmasked."""

from __future__ import annotations

from webapp.datasets.models import DatasetVersion, MaskedExample
from webapp.training import log_text, runtime
from webapp.training.models import RunKind, TrainingRun
from webapp.training.reporting import Reporter

READ_BATCH = 2_000


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
            texts = dict(Note.objects.filter(pk__in=note_ids[start : start + READ_BATCH]).values_list("pk", "text"))
            pairs.extend(TextPair(prompt="", answer=texts[pk]) for pk in note_ids[start : start + READ_BATCH])
        return pairs
    mode = DatasetVersion.Mode.UNMASKED.value if kind == RunKind.CPT else dataset.mode
    pairs = []
    for note_id, masked, label, start, end in examples.values_list(
        "note_id", "masked_text", "label", "char_start", "char_end"
    ).iterator(chunk_size=READ_BATCH):
        example = Example(
            note_id=str(note_id),
            tasks=(),
            masked_text=masked,
            label=label,
            char_span=None if start is None else (start, end),
            mode=mode,
        )
        prompt, answer = format_dsm_prompt(example)
        pairs.append(TextPair(prompt=prompt, answer=answer))
    return pairs


def run_causal(run: TrainingRun, reporter: Reporter) -> dict:
    from ml.training import train_causal_lm

    config = runtime.train_section(run)
    reporter.set_phase("train", label="reading the dataset")
    pairs = dataset_pairs(run.dataset, run.kind)
    n_pairs = len(pairs)
    reporter.log(log_text.PAIRS.format(pairs=n_pairs, dataset=run.dataset, mode=run.dataset.mode))
    runtime.checked(reporter)
    loaded = runtime.load(run.model_version, training=True)
    reporter.set_phase("train", label="training")
    mask = run.dataset.mask_token if run.kind == RunKind.DSM else None  # made one special token
    result = train_causal_lm(
        loaded,
        pairs,
        config,
        output_dir=run.output_dir,
        on_progress=reporter.on_progress,
        should_stop=reporter.should_stop,
        resume=True,
        mask_token=mask,
    )
    del loaded, pairs
    runtime.release()
    runtime.require_learned(result)  # an unchanged model is never registered
    if not runtime.is_main_process():
        return {}
    variant = "cpt" if run.kind == RunKind.CPT else run.dataset.mode
    model = runtime.register(run, result.final_dir, variant)
    reporter.log(log_text.REGISTERED % {"model": model.name})
    return {"produced_model": model, "results": {"training": runtime.result_summary(result), "pairs": n_pairs}}
