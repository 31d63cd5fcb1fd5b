"""Prompting baselines (docs/METHOD.md, section Adaptation): 0-shot with 3 system prompts, 2-shot with 3
random draws of examples. The user turn is the SFT prompt (data.sft_prompt: note, item,
mask, options) with the model's mask token; answers are constrained to the options
(scoring.py). One prediction list per variant; average them with evaluation.average_variants.

2-shot: for variant v and task T, `shots` labeled training items of T are drawn with an RNG
seeded by (seed, v, T), so all test items of a task see the same examples within a draw.
They come before the query as user/assistant turns, under the first system prompt; each
example's note is cut from the left to max_length // (shots + 2) tokens so the query keeps
room (the query note is cut from the left to fit what is left).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import replace

from ml.training import refusals
from ml.training.config import PromptingConfig
from ml.training.data import LabeledItem, sft_prompt
from ml.training.errors import TrainingInputError
from ml.training.scoring import OptionRequest, choose_options
from ml.training.vocab import mask_token_for

SYSTEM_PROMPTS = (
    "You are a clinical information extraction assistant. Read the clinical note and fill in the "
    "masked value of the requested item. Answer with exactly one of the listed options.",
    "You are an experienced physician reviewing a patient's record. Based only on what the note "
    "says, choose the option that best describes the requested item. Reply with the option text only.",
    "You complete structured clinical report forms from free-text notes. For the item in <crf_item>, "
    "output the single correct value from <options>, with no explanation.",
)


def predict_prompting(
    loaded, items: Sequence[LabeledItem], config: PromptingConfig, *, train_items: Sequence[LabeledItem] | None = None
) -> list[list[str]]:
    """`config.variants` prediction lists, each with one of the item's options per item."""
    mask = mask_token_for(loaded)
    if config.shots == 0 and config.variants > len(SYSTEM_PROMPTS):
        raise TrainingInputError(refusals.ZERO_SHOT_VARIANTS, prompts=len(SYSTEM_PROMPTS), variants=config.variants)
    if config.shots and not any(i.label is not None for i in train_items or ()):
        raise TrainingInputError(refusals.SHOTS_NEED_LABELS, shots=config.shots)
    variants = []
    for v in range(config.variants):
        if config.shots == 0:
            requests = [
                OptionRequest(sft_prompt(item, mask), item.options, system=SYSTEM_PROMPTS[v], group=item.note_id)
                for item in items
            ]
        else:
            shots = draw_shots(loaded.tokenizer, train_items, config, variant=v, mask_token=mask)
            requests = [
                OptionRequest(
                    sft_prompt(item, mask),
                    item.options,
                    system=SYSTEM_PROMPTS[0],
                    shots=shots.get(item.task, ()),
                    group=item.note_id,
                )
                for item in items
            ]
        variants.append(choose_options(loaded, requests, max_length=config.max_length, batch_size=config.batch_size))
    return variants


def draw_shots(
    tokenizer, train_items: Sequence[LabeledItem], config: PromptingConfig, *, variant: int, mask_token: str
) -> dict[str, list[tuple[str, str]]]:
    """task -> [(example prompt, example label)] for one variant (see module doc)."""
    by_task: dict[str, list[LabeledItem]] = {}
    for item in sorted(train_items, key=lambda i: i.item_id):
        if item.label is not None:
            by_task.setdefault(item.task, []).append(item)
    budget = config.max_length // (config.shots + 2)
    shots = {}
    for task, pool in by_task.items():
        seed = hashlib.blake2b(f"shots\x1f{config.seed}\x1f{variant}\x1f{task}".encode(), digest_size=8).digest()
        drawn = random.Random(int.from_bytes(seed, "big")).sample(pool, min(config.shots, len(pool)))
        shots[task] = [
            (sft_prompt(replace(i, text=_last_tokens(tokenizer, i.text, budget)), mask_token), i.label) for i in drawn
        ]
    return shots


def _last_tokens(tokenizer, text: str, n: int) -> str:
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return text if len(offsets) <= n else text[offsets[len(offsets) - n][0] :].lstrip()
