"""The paper's configurations as presets of the launch form and of experiment files.

A preset is a run kind, overrides of the defaults (the defaults ARE the paper's values, see
ml.training and webapp.training.configs) and, for the DSM-style presets, the dataset mode it
expects (random-mask and one-peak are the DSM run kind on a dataset built in that mode).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from webapp.training.configs import build_config
from webapp.training.models import RunKind


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    kind: str
    description: str
    overrides: dict = field(default_factory=dict)
    dataset_modes: tuple[str, ...] = ()  # the DatasetVersion modes it accepts (DSM-style kinds)

    def config(self) -> dict:
        config, problems = build_config(self.kind, self.overrides)
        assert not problems, problems  # presets are checked by tests
        return config


PRESETS: dict[str, Preset] = {
    p.key: p
    for p in [
        Preset(
            "dsm-full",
            _("DSM full (paper)"),
            RunKind.DSM,
            _(
                "All parameters, 1 epoch, AdamW lr 4e-5 (eps 1e-7), cosine, weight decay 0.001, warmup 0.1, batch 128, "
                "the instruction as the system turn, on a DSM dataset (peaks masked)."
            ),
            dataset_modes=("dsm",),
        ),
        Preset(
            "dsm-lora",
            "DSM LoRA",
            RunKind.DSM,
            _("As DSM full, with LoRA r 32 / alpha 64 / dropout 0.05."),
            {"train": {"finetune": "lora"}},
            dataset_modes=("dsm",),
        ),
        Preset(
            "cpt",
            "CPT",
            RunKind.CPT,
            _(
                "Continual pretraining: the same notes unmasked (an unmasked dataset, or the notes of any dataset), "
                "DSM's optimiser settings."
            ),
        ),
        Preset(
            "random-mask",
            _("random mask"),
            RunKind.DSM,
            _("Ablation: two-peak notes with random spans masked (a dataset built in mode 'random')."),
            dataset_modes=("random",),
        ),
        Preset(
            "one-peak",
            _("one peak"),
            RunKind.DSM,
            _("Ablation: notes with one peak only, that peak masked, 5 epochs (a dataset built in mode 'one_peak')."),
            {"train": {"epochs": 5.0}},
            dataset_modes=("one_peak",),
        ),
        Preset(
            "sft",
            _("LoRA SFT (paper)"),
            RunKind.SFT,
            _(
                "One multi-task LoRA model: r 32, alpha 64, dropout 0.05, lr 3e-4, batch 64, warmup 0.1, eps 1e-7, "
                "cosine, 1 epoch."
            ),
        ),
        Preset(
            "ch",
            _("CH (paper)"),
            RunKind.HEADS,
            _(
                "Classification head per task on the frozen model's last hidden state: Linear(256), ReLU, dropout 0.1; "
                "20 epochs, lr 1e-3, AdamW. Features are computed once and cached."
            ),
        ),
        Preset(
            "0-shot",
            "0-shot",
            RunKind.PROMPTING,
            _("Zero-shot prompting, 3 system prompts, scores averaged."),
            {"prompting": {"shots": 0}},
        ),
        Preset(
            "2-shot",
            "2-shot",
            RunKind.PROMPTING,
            _("Two-shot prompting, 3 random draws of 2 examples, averaged."),
            {"prompting": {"shots": 2}},
        ),
        Preset(
            "self-learning",
            _("self-learning"),
            RunKind.SELF_LEARNING,
            _(
                "An SFT teacher labels unlabeled notes; the base model is then trained (SFT) on gold + synthetic "
                "labels."
            ),
        ),
    ]
}


def get(key: str) -> Preset:
    try:
        return PRESETS[key]
    except KeyError:
        raise ValueError(
            gettext("Unknown preset %(preset)s; the presets are %(presets)s.")
            % {"preset": repr(key), "presets": ", ".join(PRESETS)}
        ) from None
