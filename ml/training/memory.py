"""Training memory planner: will a run fit on N GPUs of a given memory, and if not, which
setting to change. Pure arithmetic (no torch): the web app and `python -m ml train --plan`
call it without loading a model.

Per GPU, in bytes (P parameters, T trainable, N GPUs):

* states, exact arithmetic (tests/ml/training/test_memory.py compares them with the tensors of
  a trained tiny model):
    - full fine-tuning, precision "bf16" (this trainer: fp32 weights, bf16 autocast) and
      "fp32": weights 4P, gradients 4P, AdamW moments 8P (exp_avg + exp_avg_sq, fp32);
      "bf16" also holds the autocast's bf16 copy of the weights during forward/backward, 2P;
    - precision "bf16-master" (DeepSpeed bf16 / FSDP mixed precision): weights 2P, gradients 2P,
      fp32 master weights 4P + AdamW moments 8P (counted as optimizer states);
    - LoRA: the frozen base in its dtype (2 B a parameter in bf16, 4 in fp32) plus the adapter's
      states as above (peft keeps adapters in fp32); T = r x (in + out) per targeted linear layer.
      AdamW's per-tensor `step` scalars (4 B a tensor) are left out.
    - P counts a decoder layer's linear weights from the config's sizes, and its biases, norms and
      the tying of the output head from the model's family (`Layout` in ml/models/families/, one
      per family file): nothing here branches on a model_type. A model type with no family is
      refused (PlanError naming the supported families), not planned with another's layout.
* sharding: "ddp" replicates everything; "zero2" (ZeRO-2) shards gradients and optimizer states
  (/N) and replicates the weights; "fsdp" (FSDP FULL_SHARD, ZeRO-3-like) shards all states (/N).
  The trainer runs "ddp" (config `sharding: "none"`), "fsdp" and "zero2" (sharding.py: FSDP2 that
  keeps gathered weights from forward to backward; its fp32 shards at rest make it hold less than
  the replicated weights counted here, so "zero2" is an upper bound for it). `config_sharding` maps
  a run's config.
  `cpu_offload` (fsdp only) keeps the sharded states in host memory: none of them on the GPU.
  FSDP over several GPUs (or offloaded) also holds two units' whole weights while they run (the
  one computing and the one prefetched; a unit: a decoder layer, or the root's embeddings and
  output head, the largest for these vocabularies), in bf16 (fp32 for precision "fp32").
* activations, ESTIMATES (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models", eq. 1): a layer keeps s*b*h*(34 + 5*a*s/h) bytes of 16-bit activations
  without recomputation (s sequence, b micro-batch, h hidden size, a heads); SDPA/flash attention
  does not keep the s x s scores, so the 5as/h term counts only with `flash_attention=False`.
  With full gradient checkpointing a layer keeps its input, ~2*s*b*h bytes, and one layer is
  recomputed at a time (+ one layer's full activations). fp32 doubles them. The constant 34 was
  derived for GPT's 4h MLP; SwiGLU models differ by some tens of percent.
* logits: tokens x b x vocab x 4 B (fp32 for the loss), large for 150k-262k vocabularies. The
  trainer computes logits only for the answer (`logits_to_keep`), so DSM's are far smaller;
  `logit_tokens=None` counts the whole sequence (continual pretraining), an upper bound.
* headroom: 10% of the above + 1 GiB (CUDA context, allocator fragmentation).

A plan that does not fit names the first change, in this fixed order, that makes it fit
(SUGGESTION_ORDER): gradient checkpointing; a smaller micro-batch (the largest that fits; the
effective batch stays, by more accumulation); ZeRO-2; FSDP; more GPUs (doubling, up to 64); more
GPUs with ZeRO-2; more GPUs with FSDP; LoRA (r from the settings). Each keeps the other settings.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from ml.models.errors import UnsupportedFamilyError
from ml.models.families import family_for
from ml.models.families.base import LINEAR

GB = 10**9  # GPU memory is sold in decimal GB (an H200: 141 GB)
GIB = 2**30
H200_GB = 141.0
FINETUNE = ("full", "lora")
SHARDING = ("ddp", "zero2", "fsdp")
PRECISION = ("bf16", "fp32", "bf16-master")
ALL_LINEAR = LINEAR  # a decoder layer's linear layers: peft's "all-linear" but the output head
HEADROOM_FRACTION = 0.10
HEADROOM_BYTES = GIB
MAX_GPUS = 64
SUGGESTION_ORDER = (
    "gradient checkpointing",
    "smaller micro-batch",
    "ZeRO-2",
    "FSDP",
    "more GPUs",
    "more GPUs with ZeRO-2",
    "more GPUs with FSDP",
    "LoRA",
)

# The plan's line (MemoryPlan.summary) and its suggestions: English templates with their values, so
# that the web app can show the line in its reader's language (webapp.training.estimates lists them
# again; a test checks it lists every one of SUMMARY_TEMPLATES)
FITS = "memory: %(total)s GB per GPU of %(gpu)s: fits"
DOES_NOT_FIT = "memory: %(total)s GB per GPU of %(gpu)s: does not fit: %(suggestion)s"
NOTHING_FITS = "no single change in the planner makes it fit"
SUGGESTED = "%(change)s: %(total)s GB per GPU"
CHECKPOINTING = "enable gradient checkpointing"
MICRO_BATCH = "micro-batch %(batch)s (more accumulation steps, same effective batch)"
ZERO2_OVER = "shard gradients and optimizer states with ZeRO-2 over the %(gpus)s GPUs"
FSDP_OVER = "shard all states with FSDP over the %(gpus)s GPUs"
MORE_GPUS = "%(gpus)s GPUs"
MORE_GPUS_ZERO2 = "%(gpus)s GPUs with ZeRO-2"
MORE_GPUS_FSDP = "%(gpus)s GPUs with FSDP"
LORA_INSTEAD = "LoRA (r %(r)s) instead of full fine-tuning"
SUMMARY_TEMPLATES = (
    FITS,
    DOES_NOT_FIT,
    NOTHING_FITS,
    SUGGESTED,
    CHECKPOINTING,
    MICRO_BATCH,
    ZERO2_OVER,
    FSDP_OVER,
    MORE_GPUS,
    MORE_GPUS_ZERO2,
    MORE_GPUS_FSDP,
    LORA_INSTEAD,
)


class PlanError(ValueError):
    """Settings or a model config the planner cannot use."""


@dataclass(frozen=True)
class ModelShape:
    """What memory depends on in a decoder-only transformer (Llama, Qwen2, Qwen3, Gemma 3). The
    layout fields (biases, norms, tying) come from the model's family (ml/models/families/*.py,
    `Layout.facts`), never from its model_type here."""

    name: str
    hidden_size: int
    num_hidden_layers: int
    intermediate_size: int
    vocab_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    tie_word_embeddings: bool
    biased: tuple[str, ...] = ()  # linear layers with a bias (Qwen2: q, k, v)
    hidden_norms: int = 2  # RMSNorms over the hidden size per layer (Gemma 3: 4)
    head_norms: int = 0  # RMSNorms over one head per layer (qk-norm: 2)

    @classmethod
    def from_config(cls, config: dict, name: str = "") -> ModelShape:
        """From a Hugging Face config.json dict (a multimodal one's text_config: the language
        model only). Its family (by model_type) gives the layout; a model type with no family
        is refused (PlanError) rather than planned with another family's layout."""
        if "text_config" in config and "hidden_size" not in config:
            tied = config.get("tie_word_embeddings", config["text_config"].get("tie_word_embeddings"))
            config = {**config["text_config"], **({} if tied is None else {"tie_word_embeddings": tied})}
        try:
            family = family_for(config)
        except UnsupportedFamilyError as exc:
            raise PlanError(f"no memory plan: {exc}") from None
        try:
            heads = config["num_attention_heads"]
            return cls(
                name=name or config.get("_name_or_path", "") or family.name,
                hidden_size=config["hidden_size"],
                num_hidden_layers=config["num_hidden_layers"],
                intermediate_size=config["intermediate_size"],
                vocab_size=config["vocab_size"],
                num_attention_heads=heads,
                num_key_value_heads=config.get("num_key_value_heads") or heads,
                head_dim=config.get("head_dim") or config["hidden_size"] // heads,
                **family.layout.facts(config),
            )
        except KeyError as exc:
            raise PlanError(f"the model config lacks {exc.args[0]!r}") from exc

    def linear_layers(self) -> dict[str, tuple[int, int]]:
        """{name: (in_features, out_features)} of one decoder layer's linear layers."""
        h, i = self.hidden_size, self.intermediate_size
        q, kv = self.num_attention_heads * self.head_dim, self.num_key_value_heads * self.head_dim
        return {
            "q_proj": (h, q),
            "k_proj": (h, kv),
            "v_proj": (h, kv),
            "o_proj": (q, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    def parameters(self) -> int:
        """Exact parameter count (tied embeddings counted once)."""
        linear = self.linear_layers()
        layer = sum(a * b for a, b in linear.values()) + sum(linear[name][1] for name in self.biased)
        layer += self.hidden_norms * self.hidden_size + self.head_norms * self.head_dim
        embeddings = self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)
        return self.num_hidden_layers * layer + embeddings + self.hidden_size  # + the final norm

    def lora_parameters(self, r: int, targets: tuple[str, ...] | None = None) -> int:
        """Adapter parameters: r x (in + out) per targeted linear layer (None: all linear layers
        but the output head, peft's "all-linear")."""
        linear = self.linear_layers()
        targets = ALL_LINEAR if targets is None else tuple(targets)
        unknown = sorted(set(targets) - set(linear))
        if unknown:
            raise PlanError(f"unknown LoRA target module(s) {unknown}; known: {', '.join(linear)}")
        return self.num_hidden_layers * sum(r * sum(linear[t]) for t in targets)


def _published(name: str, model_type: str, *sizes: int, tied: bool) -> ModelShape:
    keys = ("hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size")
    keys += ("num_attention_heads", "num_key_value_heads", "head_dim")
    return ModelShape.from_config(
        {"model_type": model_type, **dict(zip(keys, sizes, strict=True)), "tie_word_embeddings": tied}, name=name
    )


# The paper's five models, from each model's published config.json on the Hugging Face hub
# (meta-llama/Llama-3.2-1B, Qwen/Qwen3-1.7B, google/gemma-3-4b-pt text_config,
# meta-llama/Llama-3.1-8B, Qwen/Qwen3-8B): hidden, layers, intermediate, vocabulary, heads, key-value
# heads, head_dim; biases and norms from their families. Gemma 3 4B: the language model only
# (3.88B of 4.3B; the vision tower is not trained on text).
PAPER_MODELS = {
    "llama3-1b": _published("llama3-1b", "llama", 2048, 16, 8192, 128256, 32, 8, 64, tied=True),
    "qwen3-1.7b": _published("qwen3-1.7b", "qwen3", 2048, 28, 6144, 151936, 16, 8, 128, tied=True),
    "gemma3-4b": _published("gemma3-4b", "gemma3_text", 2560, 34, 10240, 262208, 8, 4, 256, tied=True),
    "llama3-8b": _published("llama3-8b", "llama", 4096, 32, 14336, 128256, 32, 8, 128, tied=False),
    "qwen3-8b": _published("qwen3-8b", "qwen3", 4096, 36, 12288, 151936, 32, 8, 128, tied=False),
}


def model_shape(model: str) -> ModelShape:
    """A paper model's name, or a folder holding a config.json."""
    if model.lower() in PAPER_MODELS:
        return PAPER_MODELS[model.lower()]
    config = Path(model) / "config.json"
    if not config.is_file():
        raise PlanError(f"{model!r} is neither a model folder with a config.json nor one of {', '.join(PAPER_MODELS)}")
    return ModelShape.from_config(json.loads(config.read_text(encoding="utf-8")), name=Path(model).name)


@dataclass(frozen=True)
class PlanSettings:
    """A training setup. Defaults: the paper's DSM on one H200 (full, bf16, micro-batch 1)."""

    finetune: str = "full"  # "full" (paper, DSM) or "lora"
    sharding: str = "ddp"  # "ddp" (replicated), "zero2" (grads + optimizer sharded), "fsdp" (all)
    precision: str = "bf16"  # "bf16": fp32 weights + bf16 autocast (this trainer); "fp32"; "bf16-master"
    gpus: int = 1
    gpu_memory_gb: float = H200_GB  # per GPU, decimal GB
    seq_len: int = 2048  # tokens per example (docs/METHOD.md gives no length; the GPU auto default is 8192)
    micro_batch: int = 1  # examples per forward pass and GPU
    checkpointing: bool = True  # full gradient checkpointing (one layer recomputed at a time)
    lora_r: int = 32  # paper (SFT): r 32
    lora_targets: tuple[str, ...] | None = None  # None: all linear layers but the output head
    logit_tokens: int | None = None  # positions with logits; None: the whole sequence (upper bound)
    flash_attention: bool = True  # SDPA / flash: no s x s attention scores kept
    cpu_offload: bool = False  # fsdp only: weights, gradients and AdamW states live in host memory

    def __post_init__(self):
        for value, allowed, what in (
            (self.finetune, FINETUNE, "finetune"),
            (self.sharding, SHARDING, "sharding"),
            (self.precision, PRECISION, "precision"),
        ):
            if value not in allowed:
                raise PlanError(f"{what} must be one of {allowed}, got {value!r}")
        if self.gpus < 1 or self.micro_batch < 1 or self.seq_len < 1 or self.lora_r < 1:
            raise PlanError("gpus, micro_batch, seq_len and lora_r must be >= 1")
        if self.cpu_offload and self.sharding != "fsdp":
            raise PlanError("cpu_offload needs sharding 'fsdp'")
        if not self.gpu_memory_gb > 0:
            raise PlanError(f"gpu_memory_gb must be > 0, got {self.gpu_memory_gb}")


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per GPU, broken down; `fits` when total <= capacity."""

    model: str
    parameters: int
    trainable: int
    settings: PlanSettings
    weights: int  # trained weights and the frozen base, in their dtype
    weight_casts: int  # bf16 autocast copies of fp32 weights
    gradients: int
    optimizer: int  # AdamW moments (+ fp32 master weights for bf16-master)
    activations: int  # estimate
    logits: int  # estimate
    headroom: int
    capacity: int
    suggestion: str | None = None  # the first change (SUGGESTION_ORDER) that fits
    suggested: PlanSettings | None = None

    @property
    def states(self) -> int:
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> int:
        return self.states + self.weight_casts + self.activations + self.logits + self.headroom

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def to_dict(self) -> dict:
        parts = ("weights", "weight_casts", "gradients", "optimizer", "activations", "logits", "headroom")
        return {
            "model": self.model,
            "parameters": self.parameters,
            "trainable": self.trainable,
            "settings": dataclasses.asdict(self.settings),
            "per_gpu_gb": {**{p: _gb(getattr(self, p)) for p in parts}, "total": _gb(self.total)},
            "gpu_memory_gb": self.settings.gpu_memory_gb,
            "fits": self.fits,
            "suggestion": self.suggestion,
            "suggested_settings": dataclasses.asdict(self.suggested) if self.suggested else None,
        }

    def summary(self) -> str:
        """One line: 'memory: X GB per GPU of Y: fits' or '...: does not fit: <suggestion>'."""
        values = {"total": _gb(self.total), "gpu": f"{self.settings.gpu_memory_gb:g}"}
        if self.fits:
            return FITS % values
        return DOES_NOT_FIT % {**values, "suggestion": self.suggestion or NOTHING_FITS}


def _gb(n: int) -> float:
    return round(n / GB, 1)


def estimate(shape: ModelShape, settings: PlanSettings, *, parameters: int | None = None) -> MemoryPlan:
    """The plan for these settings, without a suggestion. `parameters`: a loaded model's exact
    count (sum of p.numel()), when it differs from the shape's (e.g. a resized vocabulary)."""
    s = settings
    n = s.gpus
    total_params = shape.parameters() if parameters is None else parameters
    half = s.precision != "fp32"
    if s.finetune == "full":
        trainable, frozen = total_params, 0
    else:
        trainable = shape.lora_parameters(s.lora_r, s.lora_targets)
        frozen = total_params
    if s.precision == "bf16-master":
        w, g, o, casts = 2 * trainable, 2 * trainable, 12 * trainable, 0
    else:  # fp32 weights (also under autocast), fp32 grads, fp32 AdamW moments
        w, g, o = 4 * trainable, 4 * trainable, 8 * trainable
        casts = 2 * trainable if s.precision == "bf16" else 0
    w += frozen * (2 if half else 4)
    if s.sharding == "zero2":
        g, o = g // n, o // n
    elif s.sharding == "fsdp":
        w, g, o, casts = w // n, g // n, o // n, casts // n
        if s.cpu_offload:
            w, g, o = 0, 0, 0
        # A unit's whole weights while it runs: the one computing and the one prefetched, each at
        # most the largest unit (a decoder layer, or the root: embeddings, output head, final norm).
        w += 2 * _largest_unit(shape, s) * (2 if half else 4) if n > 1 or s.cpu_offload else 0
    act = _activations(shape, s)
    tokens = s.seq_len if s.logit_tokens is None else s.logit_tokens
    logits = tokens * s.micro_batch * shape.vocab_size * 4
    headroom = int(HEADROOM_FRACTION * (w + casts + g + o + act + logits)) + HEADROOM_BYTES
    return MemoryPlan(
        shape.name, total_params, trainable, s, w, casts, g, o, act, logits, headroom, int(s.gpu_memory_gb * GB)
    )


def _largest_unit(shape: ModelShape, s: PlanSettings) -> int:
    """Parameters of FSDP's largest unit (sharding.py wraps each decoder layer, then the root)."""
    embeddings = shape.vocab_size * shape.hidden_size * (1 if shape.tie_word_embeddings else 2)
    layer = (shape.parameters() - embeddings - shape.hidden_size) // shape.num_hidden_layers
    if s.finetune == "lora":
        layer += shape.lora_parameters(s.lora_r, s.lora_targets) // shape.num_hidden_layers
    return max(layer, embeddings + shape.hidden_size)


def _activations(shape: ModelShape, s: PlanSettings) -> int:
    sbh = s.seq_len * s.micro_batch * shape.hidden_size
    full_layer = 34 * sbh
    if not s.flash_attention:
        full_layer += 5 * shape.num_attention_heads * s.seq_len * s.seq_len * s.micro_batch
    if s.checkpointing:
        per_model = shape.num_hidden_layers * 2 * sbh + full_layer
    else:
        per_model = shape.num_hidden_layers * full_layer
    return per_model * (2 if s.precision == "fp32" else 1)


def _candidates(s: PlanSettings):
    """(description, settings) in SUGGESTION_ORDER; each changes the given settings only."""
    replace = dataclasses.replace
    if not s.checkpointing:
        yield CHECKPOINTING, replace(s, checkpointing=True)
    b = s.micro_batch // 2
    while b >= 1:
        yield MICRO_BATCH % {"batch": b}, replace(s, micro_batch=b)
        b //= 2
    if s.sharding == "ddp" and s.gpus > 1:
        yield ZERO2_OVER % {"gpus": s.gpus}, replace(s, sharding="zero2")
    if s.sharding != "fsdp" and s.gpus > 1:
        yield FSDP_OVER % {"gpus": s.gpus}, replace(s, sharding="fsdp")
    for sharding in dict.fromkeys((s.sharding, "zero2", "fsdp")):
        if s.sharding == "fsdp" and sharding == "zero2":
            continue
        how = MORE_GPUS if sharding == s.sharding else MORE_GPUS_ZERO2 if sharding == "zero2" else MORE_GPUS_FSDP
        gpus = s.gpus * 2
        while gpus <= MAX_GPUS:
            yield how % {"gpus": gpus}, replace(s, gpus=gpus, sharding=sharding)
            gpus *= 2
    if s.finetune == "full":
        yield LORA_INSTEAD % {"r": s.lora_r}, replace(s, finetune="lora")


def config_sharding(sharding: str) -> str:
    """The planner's name for a training config's `sharding` ("none" -> "ddp", "fsdp")."""
    return {"none": "ddp", "fsdp": "fsdp", "zero2": "zero2"}.get(sharding, sharding)


def plan(shape: ModelShape, settings: PlanSettings, *, parameters: int | None = None) -> MemoryPlan:
    """`estimate`, plus, when it does not fit, the first candidate change that fits."""
    result = estimate(shape, settings, parameters=parameters)
    if result.fits:
        return result
    for description, changed in _candidates(settings):
        other = estimate(shape, changed, parameters=parameters)
        if other.fits:
            return dataclasses.replace(
                result, suggestion=SUGGESTED % {"change": description, "total": _gb(other.total)}, suggested=changed
            )
    return result


def paper_table(gpus=(1, 2, 8), gpu_memory_gb: float = H200_GB, seq_len: int = 2048) -> str:
    """The README's Markdown table: the paper's five models, full DSM (bf16 autocast over fp32
    weights, AdamW, gradient checkpointing, micro-batch 1), per-GPU GB by sharding, and FSDP with
    the states offloaded to host memory (the host then holds 16 B a parameter, over all GPUs)."""
    lines = [
        "| model | parameters | GPUs | DDP | ZeRO-2 | FSDP | FSDP + CPU offload |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, shape in PAPER_MODELS.items():
        for n in gpus:
            cells = []
            for sharding, offload in (*((sh, False) for sh in SHARDING), ("fsdp", True)):
                p = estimate(
                    shape,
                    PlanSettings(
                        sharding=sharding, cpu_offload=offload, gpus=n, gpu_memory_gb=gpu_memory_gb, seq_len=seq_len
                    ),
                )
                cells.append(f"{_gb(p.total)} {'fits' if p.fits else '**no**'}")
            lines.append(f"| {name} | {shape.parameters() / 1e9:.2f}B | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
