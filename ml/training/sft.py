"""Downstream SFT (docs/METHOD.md, section Adaptation): one multi-task LoRA model for all tasks, prompts with
options (data.sft_prompt), predictions constrained to the options (scoring.py), and the
synthetic labels of the self-learning baseline."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ml.training import refusals
from ml.training.config import SFTConfig
from ml.training.data import LabeledItem, sft_pairs, sft_prompt
from ml.training.errors import TrainingError
from ml.training.loop import train_causal_lm
from ml.training.progress import ProgressEvent, TrainResult
from ml.training.scoring import OptionRequest, choose_options


def train_sft(
    loaded,
    items: Sequence[LabeledItem],
    config: SFTConfig,
    *,
    output_dir,
    mask_token: str,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    resume: bool = True,
) -> TrainResult:
    """Fit `loaded` on the labeled items of every task at once (items without a label are
    skipped); `mask_token` is made a token of the model if it is not one yet."""
    pairs = sft_pairs(items, mask_token)
    if not pairs:
        raise TrainingError(refusals.NO_LABELED_ITEM)
    return train_causal_lm(
        loaded,
        pairs,
        config,
        output_dir=output_dir,
        on_progress=on_progress,
        should_stop=should_stop,
        resume=resume,
        mask_token=mask_token,
    )


def predict_sft(
    loaded, items: Sequence[LabeledItem], *, mask_token: str, batch_size: int = 8, max_length: int = 512
) -> list[str]:
    """One of each item's options per item: the most likely answer to its SFT prompt."""
    requests = [OptionRequest(sft_prompt(item, mask_token), item.options, group=item.note_id) for item in items]
    return choose_options(loaded, requests, max_length=max_length, batch_size=batch_size)


def self_label(
    loaded_sft, unlabeled_items: Sequence[LabeledItem], *, mask_token: str, batch_size: int = 8, max_length: int = 512
) -> list[LabeledItem]:
    """The items with the SFT model's predictions as labels (the self-learning baseline)."""
    labels = predict_sft(
        loaded_sft, unlabeled_items, mask_token=mask_token, batch_size=batch_size, max_length=max_length
    )
    return [item.with_label(label) for item, label in zip(unlabeled_items, labels)]
