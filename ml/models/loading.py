"""`load_model()`: one entry point for a registry name, a local folder, or a cached hub id."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from ml.models.convert import read_manifest
from ml.models.errors import ModelNotFoundError
from ml.models.families import Family, family_for
from ml.models.registry import REGISTRY, default_model_dir

log = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    model: torch.nn.Module  # a transformers *ForCausalLM (or Gemma3ForConditionalGeneration), eval mode
    tokenizer: object  # a transformers fast tokenizer
    family: Family
    name: str  # registry name, folder path or hub id, as asked for
    device: torch.device
    dtype: torch.dtype
    path: str  # what from_pretrained was given

    @property
    def label(self) -> str:
        """Short model name for outputs (registry name or folder name)."""
        return self.name if self.name in REGISTRY else Path(self.name.rstrip("/")).name


def pick_device(device: str | torch.device | None = None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def pick_dtype(device: torch.device, dtype: str | torch.dtype | None = None) -> torch.dtype:
    """Explicit dtype wins. Default: bf16 on a CUDA device that supports it, else fp32.
    (On CPU, relevance and training ask for bf16 where it is native: see preferred_dtype.)"""
    if dtype is not None:
        return getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def preferred_dtype(device: torch.device | str) -> torch.dtype:
    """The dtype relevance and training run in by default: bf16 on CUDA with bf16 support and on CPUs with native bf16
    instructions (AVX512-BF16 / AMX), fp32 elsewhere.

    Measured on this project's 2-core CPU (AVX512-BF16), SmolLM2-135M, ~260-340-token
    prompts: AttnLRP ~2.5x faster in bf16 than fp32; relevance Pearson 0.999 with fp32
    when the same logit is explained (0.9996 against the fp32 lxt-README baseline in
    benchmarks.relevance). With explain="next"/"max" a near-tie top token may differ
    between dtypes, and then a different logit is explained. Plain grad_input is unstable
    in bf16 (near-zero correlation with fp32): load an fp32 model to study it."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    if device.type == "cpu" and cpu_has_native_bf16():
        return torch.bfloat16
    return torch.float32


def cpu_has_native_bf16() -> bool:
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # pragma: no cover - old torch
        return False
    if capability not in ("AVX512", "AMX"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:  # pragma: no cover - non-Linux
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve(name_or_path: str, model_dir: str | os.PathLike | None = None) -> tuple[str, bool]:
    """-> (what to pass to from_pretrained, whether it is a hub id). Raises ModelNotFoundError."""
    if name_or_path in REGISTRY:
        folder = Path(model_dir) if model_dir is not None else default_model_dir()
        folder = folder / name_or_path
        if read_manifest(folder) is None:
            raise ModelNotFoundError(
                f"model {name_or_path!r} is not converted yet in {folder.parent}; create it with "
                f"`python -m ml convert --model-dir {folder.parent}`"
            )
        return str(folder), False
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"{path} is not a transformers model folder (no config.json)")
        return str(path), False
    looks_like_hub_id = name_or_path.count("/") == 1 and not name_or_path.startswith((".", "/", "~"))
    if looks_like_hub_id:
        return name_or_path, True
    raise ModelNotFoundError(
        f"no model {name_or_path!r}: not a registered name ({', '.join(REGISTRY)}), "
        f"not a folder, not a hub id; for the default model run `python -m ml convert`"
    )


def load_model(
    name_or_path: str,
    *,
    model_dir: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    allow_download: bool = False,
    attn_implementation: str | None = None,
) -> LoadedModel:
    """Load a causal LM and its tokenizer for relevance or training.

    Hub ids are read from the local Hugging Face cache only, unless allow_download=True.
    The family is checked from the config before any weights are read.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    source, is_hub = resolve(name_or_path, model_dir)
    local_only = not (is_hub and allow_download)
    try:
        config = AutoConfig.from_pretrained(source, local_files_only=local_only)
    except OSError as exc:
        hint = " (pass allow_download=True / --allow-download to fetch it)" if is_hub else ""
        raise ModelNotFoundError(f"cannot read model {name_or_path!r}{hint}: {exc}") from exc
    family = family_for(config)
    manifest = read_manifest(Path(source)) if not is_hub else None
    if manifest:
        import transformers

        if manifest.get("transformers", "").split(".")[:2] != transformers.__version__.split(".")[:2]:
            log.warning(
                "%s was converted with transformers %s but %s is running; reconvert with "
                "`python -m ml convert --force`",
                source,
                manifest.get("transformers"),
                transformers.__version__,
            )

    device = pick_device(device)
    dtype = pick_dtype(device, dtype)
    kwargs = {"local_files_only": local_only, "dtype": dtype}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    model.to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_only)
    return LoadedModel(
        model=model, tokenizer=tokenizer, family=family, name=name_or_path, device=device, dtype=dtype, path=source
    )
