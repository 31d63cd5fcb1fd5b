"""Convert a registered GGUF model, once, into a safetensors folder transformers loads fast.

Loading the GGUF takes ~15 s (dequantisation to fp32); the converted folder loads in ~2 s.
The folder is written under a temporary name and renamed when complete, with a manifest
written last, so a crashed or concurrent conversion never leaves a half folder behind.
Convert with the transformers version you run: a folder written by transformers 5.x and
read by 4.x silently gets a wrong rope_theta, so the manifest records it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

from ml.models.registry import DEFAULT_MODEL, MANIFEST, REGISTRY, default_model_dir

log = logging.getLogger(__name__)


def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def convert_default_model(model_dir: str | os.PathLike | None = None, *, force: bool = False) -> Path:
    """Convert the default model into `<model_dir>/smollm2-135m-instruct/`; return that folder."""
    return convert_registered(DEFAULT_MODEL, model_dir, force=force)


def convert_registered(name: str, model_dir: str | os.PathLike | None = None, *, force: bool = False) -> Path:
    """Idempotent: does nothing when a complete folder converted by this transformers
    version already exists (unless force)."""
    import transformers

    entry = REGISTRY[name]
    model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
    target = model_dir / name
    manifest = read_manifest(target)
    if manifest and not force and manifest.get("transformers") == transformers.__version__:
        return target

    gguf = entry.gguf_path()
    started = time.perf_counter()
    log.info("converting %s from %s", name, gguf)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers >= 5 refuses to save a model loaded from GGUF while it still carries
    # its quantizer; 4.57 does not set one, so both lines are no-ops there.
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    _align_special_tokens(tokenizer, model.config)

    model_dir.mkdir(parents=True, exist_ok=True)
    tmp = model_dir / f".{name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    # The GGUF tokenizer keeps the whole .gguf as its "slow" vocab file and save_pretrained
    # copies it (~100 MB) as tokenizer.model; the fast tokenizer.json is all we load.
    slow = tmp / "tokenizer.model"
    if slow.is_file() and slow.stat().st_size == gguf.stat().st_size:
        slow.unlink()
    (tmp / MANIFEST).write_text(
        json.dumps(
            {
                "name": name,
                "source": str(gguf),
                "source_bytes": gguf.stat().st_size,
                "model_type": model.config.model_type,
                "dtype": str(model.dtype).removeprefix("torch."),
                "transformers": transformers.__version__,
                "licence": entry.licence,
                "converted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "seconds": round(time.perf_counter() - started, 1),
            },
            indent=2,
        )
        + "\n"
    )
    finished = read_manifest(target)
    if finished and not force and finished.get("transformers") == transformers.__version__:
        shutil.rmtree(tmp)  # another process finished first: keep its folder
        return target
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    log.info("converted %s into %s", name, target)
    return target


def _align_special_tokens(tokenizer, config) -> None:
    """GGUF conversion (transformers 4.57) names <|im_start|> as both bos and eos for
    SmolLM2 while the config says eos = pad = <|im_end|> (id 2): trust the config ids."""
    for attr in ("eos", "pad"):
        token_id = getattr(config, f"{attr}_token_id", None)
        if isinstance(token_id, int) and 0 <= token_id < len(tokenizer):
            setattr(tokenizer, f"{attr}_token", tokenizer.convert_ids_to_tokens(token_id))
