"""Small data and fast configs for the ml.training tests (tiny models: tests/ml/conftest.py)."""

from __future__ import annotations

import pytest

from ml.training import CausalLMConfig, LabeledItem, TextPair

NOTES = [
    "Vital signs: heart rate 130 bpm, tachycardic, blood pressure 110/70 mmHg.",
    "He has a pacemaker since 2019 and takes amlodipine for hypertension.",
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%.",
    "Chest X-ray shows right lower lobe consolidation; started on ceftriaxone.",
]
DSM = "Fill in the masked word in the following sentence."


def dsm_pairs(n: int = 8) -> list[TextPair]:
    """Masked-note -> masked-text pairs over the tiny tokenizers' corpus."""
    out = []
    for i in range(n):
        note = NOTES[i % len(NOTES)]
        words = note.split()
        k = 2 + i % 3
        label = words[k]
        masked = " ".join(words[:k] + ["<mask>"] + words[k + 1 :])
        out.append(TextPair(f"{DSM} {masked}", label))
    return out


def labeled_items(n_per_task: int = 4) -> list[LabeledItem]:
    tasks = [
        ("tachy", "heart rate", ["tachycardic", "normal"]),
        ("pm", "presence of pacemaker", ["yes", "no", "not mentioned"]),
    ]
    items = []
    for slug, description, options in tasks:
        for i in range(n_per_task):
            items.append(
                LabeledItem(
                    item_id=f"{slug}-{i}",
                    note_id=f"n{i}",
                    task=slug,
                    description=description,
                    options=options,
                    text=NOTES[i % len(NOTES)],
                    label=options[i % len(options)],
                )
            )
    return items


def fast_config(**overrides) -> CausalLMConfig:
    values = dict(
        lr=3e-3,
        effective_batch_size=4,
        micro_batch_size=2,
        epochs=1.0,
        warmup_ratio=0.0,
        checkpoint_every=0,
        max_length=96,
        precision="fp32",
    )
    values.update(overrides)
    return CausalLMConfig(**values)


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models run ~10x faster on one thread than on two busy shared cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def pairs():
    return dsm_pairs()


@pytest.fixture
def items():
    return labeled_items()
