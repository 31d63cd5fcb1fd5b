"""Run configurations: the sections of each run kind, validation in plain words, flattening, diff.

A run's `config` is a dict of sections, each the `asdict()` of one dataclass with every default
filled in, so the stored configuration is complete:

    dsm, cpt       {"train": CausalLMConfig}
    sft            {"train": SFTConfig, "sft": SFTOptions, "evaluation": EvaluationOptions}
    heads          {"heads": HeadConfig, "features": FeatureOptions, "evaluation": EvaluationOptions}
    prompting      {"prompting": PromptingConfig, "evaluation": EvaluationOptions}
    self_learning  {"train": SFTConfig, "sft": SFTOptions, "unlabeled": UnlabeledOptions,
                    "evaluation": EvaluationOptions}

The ml.training configs carry the paper's values as defaults; the small option classes below
are the web app's own. `build_config(kind, overrides)` returns the full config and a dict of
problems ({"train.lr": "The learning rate must be greater than 0."}), in the reader's language
(a refusal of ml.training's configs too: webapp.training.refusal_text); nothing is launched while
there is one.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass

from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_lazy, ngettext, pgettext_lazy

from webapp.training import refusal_text
from webapp.training.models import RunKind


@dataclass
class EvaluationOptions:
    n_resamples: int = 1000  # bootstrap resamples for the 95% confidence intervals
    seed: int = 0  # seed of the bootstrap


@dataclass
class FeatureOptions:
    batch_size: int = 8  # items per forward pass when computing the frozen model's hidden states


@dataclass
class SFTOptions:
    mask_token: str = ""  # blank: the model family's mask token (else "<mask>")
    predict_batch_size: int = 8


@dataclass
class UnlabeledOptions:
    corpus: str = ""  # corpus name of the unlabeled notes; blank: the split's corpus
    notes: int = 200  # unlabeled notes the SFT teacher labels (notes of the split are never used)
    tasks_per_note: int = 9  # tasks sampled per note (0: every task of the split), as in the paper
    seed: int = 0


def section_classes(kind: str) -> dict[str, type]:
    from ml import training as ml_training

    evaluation = {"evaluation": EvaluationOptions}
    return {
        RunKind.DSM: {"train": ml_training.CausalLMConfig},
        RunKind.CPT: {"train": ml_training.CausalLMConfig},
        RunKind.SFT: {"train": ml_training.SFTConfig, "sft": SFTOptions, **evaluation},
        RunKind.HEADS: {"heads": ml_training.HeadConfig, "features": FeatureOptions, **evaluation},
        RunKind.PROMPTING: {"prompting": ml_training.PromptingConfig, **evaluation},
        RunKind.SELF_LEARNING: {
            "train": ml_training.SFTConfig,
            "sft": SFTOptions,
            "unlabeled": UnlabeledOptions,
            **evaluation,
        },
    }[RunKind(kind)]


MAIN_SECTION = {RunKind.HEADS: "heads", RunKind.PROMPTING: "prompting"}  # the others: "train"

LABELS = {  # each setting as the run form and messages name it, in the reader's language
    "lr": gettext_lazy("learning rate"),
    "finetune": gettext_lazy("fine-tuning"),
    "adam_eps": gettext_lazy("AdamW epsilon"),
    "lora_r": gettext_lazy("LoRA r"),
    "lora_alpha": gettext_lazy("LoRA alpha"),
    "lora_dropout": gettext_lazy("LoRA dropout"),
    "max_steps": gettext_lazy("maximum steps"),
    "n_resamples": gettext_lazy("number of bootstrap resamples"),
    "tasks_per_note": gettext_lazy("tasks per note"),
    "lora_target_modules": gettext_lazy("LoRA target modules"),
    "max_grad_norm": gettext_lazy("gradient clipping norm"),
    "instruction_turn": gettext_lazy("DSM instruction turn"),
    "cpu_offload": gettext_lazy("CPU offload (fsdp)"),
    "batch_size": gettext_lazy("batch size"),
    "checkpoint_every": gettext_lazy("checkpoint every"),
    "corpus": gettext_lazy("corpus"),
    "dropout": gettext_lazy("dropout"),
    "effective_batch_size": gettext_lazy("effective batch size"),
    "epochs": gettext_lazy("epochs"),
    "gradient_checkpointing": gettext_lazy("gradient checkpointing"),
    "hidden": gettext_lazy("hidden units"),
    "mask_token": gettext_lazy("mask token"),
    "max_length": gettext_lazy("max length"),
    "micro_batch_size": gettext_lazy("micro batch size"),
    "notes": gettext_lazy("notes"),
    "precision": gettext_lazy("precision"),
    "predict_batch_size": gettext_lazy("prediction batch size"),
    "scheduler": gettext_lazy("scheduler"),
    "seed": gettext_lazy("seed"),
    "sharding": gettext_lazy("sharding"),
    "shots": gettext_lazy("shots"),
    "variants": gettext_lazy("variants"),
    "warmup_ratio": gettext_lazy("warmup ratio"),
    "weight_decay": gettext_lazy("weight decay"),
}
SECTION_LABELS = {  # a configuration's sections, as the run form heads them
    "train": pgettext_lazy("settings section", "training"),
    "sft": pgettext_lazy("settings section", "SFT"),
    "heads": pgettext_lazy("settings section", "classification heads"),
    "features": pgettext_lazy("settings section", "features"),
    "prompting": pgettext_lazy("settings section", "prompting"),
    "evaluation": pgettext_lazy("settings section", "evaluation"),
    "unlabeled": pgettext_lazy("settings section", "unlabeled notes"),
}
EMPTY_MEANS = {  # what an empty optional setting means, where it is not "no limit"
    "max_length": gettext_lazy("Empty: auto (the model's context, up to 8,192 tokens, on a GPU; 512 on the CPU)"),
}
CHOICES = {  # as ml.training.config accepts them
    "finetune": ("full", "lora"),
    "precision": ("auto", "bf16", "fp32"),
    "scheduler": ("cosine", "linear", "constant", "constant_with_warmup"),
    "instruction_turn": ("system", "user"),
    "sharding": ("none", "fsdp", "zero2"),  # none: DDP; fsdp, zero2: FSDP2 (ml/training/sharding.py)
}
CHOICE_LABELS = {  # how the form shows a choice whose value is a word (the others are names: bf16, fsdp)
    "full": pgettext_lazy("setting value", "full"),
    "auto": pgettext_lazy("setting value", "auto"),
    "cosine": pgettext_lazy("setting value", "cosine"),
    "linear": pgettext_lazy("setting value", "linear"),
    "constant": pgettext_lazy("setting value", "constant"),
    "constant_with_warmup": pgettext_lazy("setting value", "constant with warmup"),
    "system": pgettext_lazy("setting value", "system"),
    "user": pgettext_lazy("setting value", "user"),
    "none": pgettext_lazy("setting value", "none (DDP)"),
}
POSITIVE = {"epochs", "lr", "adam_eps", "lora_alpha", "max_grad_norm"}
AT_LEAST_ONE = {
    "effective_batch_size",
    "micro_batch_size",
    "lora_r",
    "hidden",
    "batch_size",
    "variants",
    "n_resamples",
    "predict_batch_size",
    "notes",
    "max_steps",
}
FRACTION = {"warmup_ratio", "lora_dropout", "dropout"}  # 0 <= value < 1
NON_NEGATIVE = {"weight_decay", "tasks_per_note", "shots", "checkpoint_every"}
MAX_SHOTS = 8
ZERO_SHOT_PROMPTS = 3  # len(ml.training.SYSTEM_PROMPTS): one 0-shot variant per system prompt
MAX_LENGTH_RANGE = (8, 131_072)


def label(name: str) -> str:
    return str(LABELS.get(name, name.replace("_", " ")))


def _setting(template: str, key: str) -> str:
    """A problem's sentence (translated) naming the setting in the same language, never an
    English sentence around a translated name."""
    return template % {"setting": label(key)}


def build_config(kind: str, overrides: dict | None = None) -> tuple[dict, dict[str, str]]:
    """(full config, problems). Unknown sections or keys are problems, as are wrong types and
    values outside their range; the returned config holds every default."""
    classes = section_classes(kind)
    overrides = overrides or {}
    problems: dict[str, str] = {}
    if not isinstance(overrides, dict):
        return {}, {"config": gettext('The configuration must be an object of sections, e.g. {"train": {"lr": 4e-5}}.')}
    for name in sorted(set(overrides) - set(classes)):
        problems[name] = gettext("Unknown section %(section)s for a %(kind)s run; its sections are %(sections)s.") % {
            "section": repr(name),
            "kind": RunKind(kind).label,
            "sections": ", ".join(classes),
        }
    config = {}
    for name, cls in classes.items():
        values = overrides.get(name) or {}
        if not isinstance(values, dict):
            problems[name] = gettext("Section %(section)s must be an object of settings.") % {"section": repr(name)}
            continue
        section, section_problems = _section(name, cls, values)
        problems.update(section_problems)
        config[name] = section
    for key, problem in _cross_checks(config).items():
        problems.setdefault(key, problem)
    return config, problems


def seed_of(kind: str, config: dict) -> int:
    return int(config.get(MAIN_SECTION.get(RunKind(kind), "train"), {}).get("seed", 0))


def flatten(config: dict) -> dict[str, object]:
    """{"train.lr": 4e-5, ...} in section order."""
    return {f"{section}.{key}": value for section, values in config.items() for key, value in (values or {}).items()}


def diff(a: dict, b: dict) -> list[tuple[str, object, object]]:
    """Keys (dotted, sorted) whose values differ between two flat dicts; a missing key is None."""
    keys = sorted(set(a) | set(b))
    return [(key, a.get(key), b.get(key)) for key in keys if not _same(a.get(key), b.get(key))]


def _same(x, y) -> bool:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
    if numbers:
        return math.isclose(x, y, rel_tol=1e-12, abs_tol=0.0)
    return type(x) is type(y) and x == y


def _section(name: str, cls, values: dict) -> tuple[dict, dict[str, str]]:
    """(the section with every default, problems). Types and ranges are checked here, with
    messages per setting, before the dataclass's own checks (which stay the last word)."""
    problems = {}
    types = field_types(cls)
    for key in sorted(set(values) - set(types)):
        problems[f"{name}.{key}"] = gettext(
            "Unknown setting %(setting)s in section %(section)s; its settings are %(settings)s."
        ) % {"setting": repr(key), "section": repr(name), "settings": ", ".join(types)}
    clean = {}
    for key, value in values.items():
        if key not in types:
            continue
        value, problem = _typed(key, value, types[key])
        if problem:
            problems[f"{name}.{key}"] = problem
        else:
            clean[key] = value
    if problems:
        return {}, problems
    merged = {**dataclasses.asdict(cls()), **clean}
    for key, value in merged.items():
        problem = _range_problem(key, value)
        if problem:
            problems[f"{name}.{key}"] = problem
    for key, problem in _cross_checks({name: merged}).items():  # said once, beside its setting,
        problems.setdefault(key, problem)  # not again by the dataclass's own check below
    if problems:
        return merged, problems
    try:
        instance = cls.from_dict(clean) if hasattr(cls, "from_dict") else cls(**clean)
    except (TypeError, ValueError) as exc:  # ml.training's refusal, shown in the reader's language
        return merged, {
            name: gettext("Section %(section)s: %(reason)s")
            % {"section": repr(name), "reason": refusal_text.shown(str(exc))}
        }
    return dataclasses.asdict(instance), {}


def field_types(cls) -> dict[str, set]:
    """{setting: the Python types it accepts (NoneType when it may be empty)}."""
    hints = _hints(cls)
    return {f.name: _base_types(hints.get(f.name), f) for f in dataclasses.fields(cls)}


def _hints(cls) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - fall back to the defaults' types
        return {}


def _typed(key: str, value, expected: set) -> tuple[object, str]:
    """Coerce a JSON (or form) value to the setting's type where that is lossless; else a problem."""
    if list in expected:
        if value is None or value == "":
            return (None, "") if type(None) in expected else ([], "")
        if isinstance(value, str):  # a form field: comma-separated
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value, ""
        return None, _setting(gettext("The %(setting)s must be a list of texts."), key)
    if value is None:
        return (
            (None, "")
            if type(None) in expected or not expected
            else (None, _setting(gettext("The %(setting)s cannot be empty."), key))
        )
    if bool in expected:
        if isinstance(value, bool):
            return value, ""
        return None, _setting(gettext("The %(setting)s must be true or false."), key)
    if isinstance(value, bool):
        return None, _setting(gettext("The %(setting)s must be a number, not true/false."), key) if {
            int,
            float,
        } & expected else _setting(gettext("The %(setting)s has the wrong type."), key)
    if int in expected and float not in expected:
        if isinstance(value, int):
            return value, ""
        if isinstance(value, float) and value.is_integer():
            return int(value), ""
        return None, _setting(gettext("The %(setting)s must be a whole number."), key)
    if float in expected:
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value), ""
        return None, _setting(gettext("The %(setting)s must be a number."), key)
    if str in expected:
        if isinstance(value, str):
            return value, ""
        return None, _setting(gettext("The %(setting)s must be a text."), key)
    return value, ""


def _base_types(hint, field) -> set:
    if hint is None:
        default = field.default if field.default is not dataclasses.MISSING else None
        return {type(default)} if default is not None else set()
    origin = typing.get_origin(hint)
    if origin is list or hint is list:
        return {list}
    if origin is typing.Literal:
        return {type(arg) for arg in typing.get_args(hint)}
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        types = set()
        for arg in typing.get_args(hint):
            types |= {type(None)} if arg is type(None) else _base_types(arg, field)
        return types
    return {hint} if isinstance(hint, type) else set()


def _range_problem(key: str, value) -> str:
    name = label(key)
    if value is None:
        return ""
    if key in CHOICES and value not in CHOICES[key]:
        return gettext("The %(setting)s must be one of %(choices)s; got %(value)s.") % {
            "setting": name,
            "choices": ", ".join(CHOICES[key]),
            "value": repr(value),
        }
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    if key in POSITIVE and not value > 0:
        return gettext("The %(setting)s must be greater than 0.") % {"setting": name}
    if key in AT_LEAST_ONE and value < 1:
        return gettext("The %(setting)s must be at least 1.") % {"setting": name}
    if key in FRACTION and not 0 <= value < 1:
        return gettext("The %(setting)s must be at least 0 and below 1 (a fraction).") % {"setting": name}
    if key in NON_NEGATIVE and value < 0:
        return gettext("The %(setting)s cannot be negative.") % {"setting": name}
    if key == "shots" and value > MAX_SHOTS:
        return gettext("At most %(shots)s shots (the paper compares 0-shot and 2-shot).") % {"shots": MAX_SHOTS}
    if key == "max_length" and not MAX_LENGTH_RANGE[0] <= value <= MAX_LENGTH_RANGE[1]:
        return gettext("The maximum length must be between %(low)s and %(high)s tokens.") % {
            "low": MAX_LENGTH_RANGE[0],
            "high": number_format(MAX_LENGTH_RANGE[1], force_grouping=True),
        }
    return ""


def _cross_checks(config: dict) -> dict[str, str]:
    problems = {}
    train = config.get("train")
    if train and train["micro_batch_size"] >= 1 and train["effective_batch_size"] % train["micro_batch_size"]:
        problems["train.effective_batch_size"] = gettext(
            "The effective batch size (%(effective)s) must be a multiple of the micro-batch size (%(micro)s): each "
            "optimizer step accumulates whole micro-batches."
        ) % {"effective": train["effective_batch_size"], "micro": train["micro_batch_size"]}
    if train and train.get("cpu_offload") and train.get("sharding") != "fsdp":
        problems["train.cpu_offload"] = gettext(
            "CPU offload keeps FSDP's shards in host memory: set the sharding to fsdp."
        )
    prompting = config.get("prompting")
    if prompting and prompting.get("shots") == 0 and prompting.get("variants", 0) > ZERO_SHOT_PROMPTS:
        problems["prompting.variants"] = ngettext(
            "0-shot prompting has %(prompts)s system prompt, so at most %(prompts)s variant.",
            "0-shot prompting has %(prompts)s system prompts, so at most %(prompts)s variants.",
            ZERO_SHOT_PROMPTS,
        ) % {"prompts": ZERO_SHOT_PROMPTS}
    return problems
