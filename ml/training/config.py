"""Training configurations: commented dataclasses holding the paper's values as defaults
(docs/METHOD.md, sections DSM training and Adaptation). A config is saved with every checkpoint
and run (`asdict(config)`), and read back with `Config.from_dict(d)`, which rejects unknown keys.

No torch here: the web app builds and validates configs without loading a model.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ml.training import refusals
from ml.training.errors import TrainingInputError

FINETUNE = ("full", "lora")
INSTRUCTION_TURNS = ("system", "user")
CPU_MAX_LENGTH = 512  # max_length=None on CPU (any device but CUDA): the CPU-scale default
GPU_MAX_LENGTH = 8192  # max_length=None on CUDA: the model's context, up to this many tokens
PRECISIONS = ("auto", "bf16", "fp32")
SCHEDULERS = ("cosine", "linear", "constant", "constant_with_warmup")
SHARDINGS = ("none", "fsdp", "zero2")


class _FromDict:
    @classmethod
    def from_dict(cls, data: dict[str, Any] | None):
        """Build from a plain dict (e.g. a saved config); unknown keys are a ValueError."""
        data = dict(data or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise TrainingInputError(
                refusals.UNKNOWN_KEYS, config=cls.__name__, unknown=", ".join(unknown), known=", ".join(sorted(names))
            )
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check(condition: bool, template: str, **values) -> None:
    if not condition:
        raise TrainingInputError(template, **values)


def _one_of(setting: str, value, choices: tuple) -> None:
    _check(value in choices, refusals.ONE_OF, setting=setting, choices=str(choices), value=repr(value))


@dataclass
class CausalLMConfig(_FromDict):
    """DSM training, continual pretraining, any prompt -> answer causal-LM fine-tuning.
    Defaults: the paper's DSM training (docs/METHOD.md, section DSM training)."""

    finetune: str = "full"  # "full": all parameters (paper, DSM); "lora": adapters only
    epochs: float = 1.0  # paper: 1 epoch; fractions allowed (steps are rounded up)
    lr: float = 4e-5  # paper: 4e-5 (DSM)
    scheduler: str = "cosine"  # paper: cosine (transformers.get_scheduler name)
    weight_decay: float = 0.001  # paper: 0.001; applied to matrices only, not to biases / norms
    warmup_ratio: float = 0.1  # paper: 0.1 of the optimizer steps (rounded up)
    effective_batch_size: int = 128  # paper: 128 = micro_batch_size x accumulation x processes
    micro_batch_size: int = 4  # examples per forward pass and process
    # Tokens per example; the prompt is cut from the left, never the answer. None ("auto"):
    # on CUDA the model's context up to GPU_MAX_LENGTH (8192), on CPU CPU_MAX_LENGTH (512);
    # resolved when training starts (resolve_max_length) and said in the run's first message.
    max_length: int | None = None
    adam_eps: float = 1e-7  # AdamW epsilon: the reference code's 1e-7 (DSM and SFT); torch's default is 1e-8
    # Where the DSM instruction ("Fill in the masked word...") goes: "system": its own system
    # turn, the masked note the user turn (the paper's layout), where the chat template has a
    # system role; templates without one (and models without a template) keep the single
    # user turn. "user": always the single user turn "{instruction} {masked note}".
    instruction_turn: str = "system"
    seed: int = 0  # data order, LoRA init, dropout
    lora_r: int = 32  # paper (SFT): r 32
    lora_alpha: int = 64  # paper (SFT): alpha 64
    lora_dropout: float = 0.05  # paper (SFT): 0.05
    # LoRA target modules; None = every linear layer but the output head (peft "all-linear").
    lora_target_modules: list[str] | None = None
    precision: str = "auto"  # "auto": bf16 autocast on CUDA with bf16 and on CPUs with native bf16
    checkpoint_every: int = 50  # optimizer steps between checkpoints (0: only on cancel)
    max_steps: int | None = None  # cap on optimizer steps, for smoke runs
    gradient_checkpointing: bool = False  # trade compute for activation memory
    max_grad_norm: float = 1.0  # gradient clipping
    # "none": every process holds the whole model (DDP across processes, the paper's models up to
    # ~4B on 141 GB); "fsdp": FSDP2, weights, gradients and optimizer states split over the
    # processes (sharding.py; e.g. 8B full DSM on 2 x 141 GB, see memory.py); "zero2": FSDP2 that
    # keeps each layer's gathered weights from its forward to its backward (one all-gather a step
    # instead of two; all weights whole during a micro-batch, like ZeRO-2), the paper's setting
    sharding: str = "none"
    cpu_offload: bool = False  # fsdp only: keep the sharded states in host memory (slower, less GPU memory)

    def __post_init__(self):
        _one_of("finetune", self.finetune, FINETUNE)
        _one_of("precision", self.precision, PRECISIONS)
        _one_of("scheduler", self.scheduler, SCHEDULERS)
        _check(
            self.epochs > 0 and math.isfinite(self.epochs), refusals.ABOVE_ZERO_GOT, setting="epochs", value=self.epochs
        )
        _check(self.lr > 0, refusals.ABOVE_ZERO_GOT, setting="lr", value=self.lr)
        _check(0 <= self.warmup_ratio < 1, refusals.FRACTION_GOT, setting="warmup_ratio", value=self.warmup_ratio)
        _check(self.micro_batch_size >= 1, refusals.AT_LEAST, setting="micro_batch_size", low=1)
        _check(
            self.effective_batch_size >= self.micro_batch_size
            and self.effective_batch_size % self.micro_batch_size == 0,
            refusals.MULTIPLE,
            effective=self.effective_batch_size,
            micro=self.micro_batch_size,
        )
        _check(self.max_length is None or self.max_length >= 8, refusals.MAX_LENGTH_AUTO)
        _one_of("instruction_turn", self.instruction_turn, INSTRUCTION_TURNS)
        _check(self.checkpoint_every >= 0, refusals.AT_LEAST, setting="checkpoint_every", low=0)
        _check(self.max_steps is None or self.max_steps >= 1, refusals.MAX_STEPS)
        _check(self.lora_r >= 1 and self.lora_alpha > 0 and 0 <= self.lora_dropout < 1, refusals.LORA_SETTINGS)
        _check(self.max_grad_norm > 0, refusals.ABOVE_ZERO, setting="max_grad_norm")
        _one_of("sharding", self.sharding, SHARDINGS)
        _check(not self.cpu_offload or self.sharding == "fsdp", refusals.CPU_OFFLOAD)

    def accumulation_steps(self, processes: int = 1) -> int:
        """Micro-batches per optimizer step and process: effective = micro x this x processes."""
        per_step = self.micro_batch_size * processes
        if self.effective_batch_size % per_step:
            raise TrainingInputError(
                refusals.ACCUMULATION,
                effective=self.effective_batch_size,
                micro=self.micro_batch_size,
                processes=processes,
            )
        return self.effective_batch_size // per_step


@dataclass
class SFTConfig(CausalLMConfig):
    """Downstream multi-task SFT with LoRA (docs/METHOD.md, section Adaptation)."""

    finetune: str = "lora"  # paper: LoRA
    lr: float = 3e-4  # paper: 3e-4
    effective_batch_size: int = 64  # paper: 64
    # SFT prompts stay one user turn: predictions (ml.training.sft) score them that way.
    instruction_turn: str = "user"
    # adam_eps 1e-7 (paper), max_length (auto), weight decay (not given for SFT in the paper),
    # warmup 0.1, cosine, 1 epoch, r 32, alpha 64, dropout 0.05: as CausalLMConfig

    def __post_init__(self):
        super().__post_init__()
        _check(self.instruction_turn == "user", refusals.SFT_USER_TURN)


def resolve_max_length(max_length: int | None, model_config, device) -> int:
    """The tokens per example a run uses: max_length when given; else (auto) the model's
    context (max_position_embeddings, also of a multimodal config's text_config) up to
    GPU_MAX_LENGTH on CUDA, and CPU_MAX_LENGTH on any other device. `device`: a torch.device
    or its type as a string ("cuda", "cpu")."""
    if max_length is not None:
        return max_length
    if getattr(device, "type", device) != "cuda":
        return CPU_MAX_LENGTH
    context = getattr(model_config, "max_position_embeddings", None)
    if context is None:
        context = getattr(getattr(model_config, "text_config", None), "max_position_embeddings", None)
    return min(context, GPU_MAX_LENGTH) if context else GPU_MAX_LENGTH


@dataclass
class HeadConfig(_FromDict):
    """Classification head on the frozen LM's last hidden state (docs/METHOD.md, section Adaptation)."""

    hidden: int = 256  # paper: Linear(hidden, 256) -> ReLU -> Dropout -> Linear(256, classes)
    dropout: float = 0.1  # paper: 0.1
    epochs: int = 20  # paper: 20
    lr: float = 1e-3  # paper: 1e-3, AdamW
    batch_size: int = 32
    weight_decay: float = 0.0
    seed: int = 0
    max_length: int = 512  # prompt tokens for feature extraction (cut from the left)

    def __post_init__(self):
        _check(self.hidden >= 1 and self.epochs >= 1 and self.batch_size >= 1, refusals.HEAD_SIZES)
        _check(0 <= self.dropout < 1, refusals.FRACTION_GOT, setting="dropout", value=self.dropout)
        _check(self.lr > 0, refusals.ABOVE_ZERO_GOT, setting="lr", value=self.lr)


@dataclass
class PromptingConfig(_FromDict):
    """0-shot / 2-shot prompting baselines (docs/METHOD.md, section Adaptation)."""

    shots: int = 0  # 0: one run per system prompt variant; 2: two examples per task from train_items
    variants: int = 3  # paper: 3 system prompts (0-shot) / 3 random draws of examples (2-shot)
    seed: int = 0  # draws of the few-shot examples
    max_length: int = 1024  # prompt tokens (examples included); the query note is cut from the left
    batch_size: int = 8  # sequences per forward pass when scoring options

    def __post_init__(self):
        _check(self.shots >= 0, refusals.AT_LEAST_GOT, setting="shots", low=0, value=self.shots)
        _check(self.variants >= 1, refusals.AT_LEAST_GOT, setting="variants", low=1, value=self.variants)
        _check(self.max_length >= 16, refusals.AT_LEAST, setting="max_length", low=16)
