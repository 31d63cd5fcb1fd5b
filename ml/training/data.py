"""Training records, the train/test split and the SFT prompt. No torch here.

- `TextPair(prompt, answer)`: one causal-LM example, loss on the answer only. DSM:
  `TextPair(*ml.masking.format_dsm_prompt(example))`; continual pretraining (CPT): prompt ""
  and the whole note as answer (then it is plain language modelling on the note, see
  ml.training.encoding).
- `LabeledItem`: one (note, task) pair of a labeled classification task.
- `split_items`: the paper's 85/15 split at note-item level.
- `sft_prompt`: the paper's SFT prompt with options (docs/METHOD.md, section Adaptation).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ml.masking import DSM_INSTRUCTION
from ml.training import refusals
from ml.training.errors import TrainingInputError

OPTION_SEPARATOR = ", "


@dataclass(frozen=True)
class TextPair:
    prompt: str
    answer: str

    def __post_init__(self):
        if not isinstance(self.prompt, str) or not isinstance(self.answer, str):
            raise TypeError("TextPair prompt and answer must be strings")
        if not self.answer.strip():
            raise TrainingInputError(refusals.EMPTY_ANSWER)


@dataclass(frozen=True)
class LabeledItem:
    item_id: str
    note_id: str
    task: str  # task slug
    description: str  # s_T, e.g. "heart rate"
    options: list[str] = field(hash=False)  # the task's labels, in display order
    text: str = ""  # the clinical note
    label: str | None = None  # gold label (one of options); None for unlabeled notes

    def __post_init__(self):
        if not self.options or len(set(self.options)) != len(self.options):
            raise TrainingInputError(refusals.ITEM_OPTIONS, item=repr(self.item_id))
        if self.label is not None and self.label not in self.options:
            raise TrainingInputError(
                refusals.ITEM_LABEL, item=repr(self.item_id), label=repr(self.label), options=str(self.options)
            )

    def with_label(self, label: str | None) -> LabeledItem:
        return replace(self, label=label)


def split_items(
    items: Sequence[LabeledItem], *, test_ratio: float = 0.15, seed: int = 0
) -> tuple[list[LabeledItem], list[LabeledItem]]:
    """(train, test), each sorted by item_id. Items are ranked by a hash of (seed, item_id)
    and the first round(n x test_ratio) go to test (at least one each side when n >= 2 and
    0 < test_ratio < 1), so the split depends only on the seed and the item ids, never on
    the input order, and the ratio is exact."""
    if not 0 <= test_ratio <= 1:
        raise TrainingInputError(refusals.TEST_RATIO, value=test_ratio)
    ids = [item.item_id for item in items]
    if len(set(ids)) != len(ids):
        raise TrainingInputError(refusals.UNIQUE_IDS)
    n = len(items)
    n_test = round(n * test_ratio)
    if n >= 2 and 0 < test_ratio < 1:
        n_test = min(max(n_test, 1), n - 1)
    ranked = sorted(items, key=lambda item: (_rank(seed, item.item_id), item.item_id))
    test, train = ranked[:n_test], ranked[n_test:]
    return sorted(train, key=lambda i: i.item_id), sorted(test, key=lambda i: i.item_id)


def _rank(seed: int, item_id: str) -> bytes:
    return hashlib.blake2b(f"split\x1f{seed}\x1f{item_id}".encode(), digest_size=16).digest()


def sft_prompt(item: LabeledItem, mask_token: str) -> str:
    """The paper's SFT prompt (docs/METHOD.md, section Adaptation), the answer being the label:

        Fill in the masked word in the following sentence. {note} <crf_item> {s_T}? {mask}
        <\\crf_item> <options>{option 1, option 2, ...}<\\options>

    (one line; closing tags written with a backslash as in the paper). Options are joined
    with ", " in the item's order."""
    before, after = sft_prompt_parts(item, mask_token)
    return f"{before}{item.text}{after}"


def sft_prompt_parts(item: LabeledItem, mask_token: str) -> tuple[str, str]:
    """(text before the note, text after it) of the SFT prompt."""
    if not mask_token:
        raise TrainingInputError(refusals.MASK_TOKEN)
    options = OPTION_SEPARATOR.join(item.options)
    return (
        f"{DSM_INSTRUCTION} ",
        f" <crf_item> {item.description}? {mask_token} <\\crf_item> <options>{options}<\\options>",
    )


def sft_pairs(items: Sequence[LabeledItem], mask_token: str) -> list[TextPair]:
    """TextPairs of the labeled items (items without a label are skipped)."""
    return [TextPair(sft_prompt(item, mask_token), item.label) for item in items if item.label is not None]
