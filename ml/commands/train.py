"""`python -m ml train`: DSM training or continual pretraining from a JSONL file.

Each line is either {"prompt": ..., "answer": ...} (loss on the answer; an empty prompt means
plain language modelling on the answer, i.e. continual pretraining) or a line of
`python -m ml examples` ({"input", "label", "mode", ...}), formatted with the DSM prompt.
The config is a JSON object of CausalLMConfig keys (default: the paper's DSM values).
The model is trained in fp32 weights (bf16 autocast where the precision resolves to it) and
saved to OUT/final/; rerunning the same command resumes from OUT/checkpoint-last/.
Multi-GPU: `accelerate launch --multi_gpu --num_processes N -m ml train ...`.
`--plan` trains nothing: it prints, as JSON, whether the run fits on --gpus GPUs of --gpu-memory
GB each and which setting to change (ml/training/memory.py); --model may also name one of the
paper's models (llama3-1b, qwen3-1.7b, gemma3-4b, llama3-8b, qwen3-8b).
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="train a causal LM on prompt -> answer pairs (DSM, CPT)", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", required=True, help="registered model name, model folder or cached hub id")
    parser.add_argument(
        "--model-dir", default=None, help="folder of registered models (default $MODEL_DIR or var/models)"
    )
    parser.add_argument("--pairs", help="JSONL of {prompt, answer} or of `ml examples` lines (required to train)")
    parser.add_argument("--out", help="output folder (final/ and checkpoint-last/ go there; required to train)")
    parser.add_argument("--config", default=None, help="JSON file with CausalLMConfig keys")
    parser.add_argument(
        "--mask-token",
        default=None,
        help="mask token the prompts use; added to the tokenizer if missing (default: none)",
    )
    parser.add_argument("--no-resume", action="store_true", help="start over even if a checkpoint exists")
    plan = parser.add_argument_group(
        "memory plan (--plan; finetune, sharding, offload, micro-batch, length, checkpointing default to --config)"
    )
    plan.add_argument(
        "--plan", action="store_true", help="print whether the run fits in GPU memory (JSON), train nothing"
    )
    plan.add_argument("--finetune", choices=("full", "lora"), default=None)
    plan.add_argument(
        "--sharding", choices=("ddp", "zero2", "fsdp"), default=None, help="default: the config's (none: ddp)"
    )
    plan.add_argument("--cpu-offload", action=argparse.BooleanOptionalAction, default=None)
    plan.add_argument("--precision", choices=("bf16", "fp32", "bf16-master"), default=None)
    plan.add_argument("--gpus", type=int, default=1)
    plan.add_argument("--gpu-memory", type=float, default=141.0, help="GB per GPU (default: an H200's 141)")
    plan.add_argument("--seq-len", type=int, default=None, help="tokens per example (default: max_length, else 2048)")
    plan.add_argument("--micro-batch", type=int, default=None)
    plan.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=None)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ml.commands.peaks import fail
    from ml.jsonl import JsonlError

    if args.plan:
        return _plan(args)
    if not args.pairs or not args.out:
        return fail(ValueError("--pairs and --out are required to train (or ask for --plan)"))
    try:
        config = _config(args.config)
        pairs = _pairs(args.pairs)
    except (JsonlError, ValueError, OSError) as exc:
        return fail(exc)
    from ml.models import ModelError, load_model
    from ml.training import TrainingCancelled, TrainingError, train_causal_lm

    try:
        loaded = load_model(args.model, model_dir=args.model_dir, dtype="float32")
        result = train_causal_lm(
            loaded,
            pairs,
            config,
            output_dir=args.out,
            on_progress=_print,
            resume=not args.no_resume,
            mask_token=args.mask_token,
        )
    except TrainingCancelled as exc:
        print(f"cancelled: {exc}", file=sys.stderr)
        return 1
    except (ModelError, TrainingError, ValueError, OSError) as exc:
        return fail(exc)
    print(
        f"train: {result.steps} steps, {result.tokens} tokens in {result.seconds:.0f} s, final loss "
        f"{result.final_loss:.4f}; model saved to {result.final_dir}",
        file=sys.stderr,
    )
    print(result.final_dir)
    return 0


def _plan(args) -> int:
    """Print the memory plan of this run as JSON (ml/training/memory.py)."""
    from ml.commands.peaks import fail
    from ml.training.memory import PlanError, PlanSettings, config_sharding, model_shape, plan

    try:
        config = _config(args.config)
        settings = PlanSettings(
            finetune=args.finetune or config.finetune,
            sharding=args.sharding or config_sharding(config.sharding),
            cpu_offload=config.cpu_offload if args.cpu_offload is None else args.cpu_offload,
            precision=args.precision or ("fp32" if config.precision == "fp32" else "bf16"),
            gpus=args.gpus,
            gpu_memory_gb=args.gpu_memory,
            seq_len=args.seq_len or config.max_length or 2048,
            micro_batch=args.micro_batch or (config.micro_batch_size if args.config else 1),
            checkpointing=args.checkpointing
            if args.checkpointing is not None
            else (config.gradient_checkpointing if args.config else True),
            lora_r=config.lora_r,
            lora_targets=tuple(config.lora_target_modules) if config.lora_target_modules else None,
        )
        result = plan(model_shape(args.model), settings)
    except (PlanError, ValueError, OSError) as exc:
        return fail(exc)
    print(json.dumps(result.to_dict(), indent=2))
    return 0


def _config(path):
    from ml.training import CausalLMConfig

    if path is None:
        return CausalLMConfig()
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the config must be a JSON object")
    return CausalLMConfig.from_dict(data)


def _pairs(path):
    from ml.jsonl import JsonlError, read_jsonl
    from ml.masking import MaskedExample, format_dsm_prompt
    from ml.training import TextPair

    pairs = []
    for line_no, obj in read_jsonl(path):
        if "prompt" in obj or "answer" in obj:
            prompt, answer = obj.get("prompt"), obj.get("answer")
        elif "input" in obj and "label" in obj:
            example = MaskedExample(
                str(obj.get("note_id", "")),
                tuple(obj.get("tasks") or ()),
                obj["input"],
                obj["label"],
                None,
                obj.get("mode", "dsm"),
            )
            prompt, answer = format_dsm_prompt(example)
        else:
            raise JsonlError(path, line_no, "expected {prompt, answer} or {input, label}")
        if not isinstance(prompt, str) or not isinstance(answer, str) or not answer.strip():
            raise JsonlError(path, line_no, "prompt must be a string and answer a non-empty string")
        pairs.append(TextPair(prompt, answer))
    if not pairs:
        raise ValueError(f"{path}: no pairs")
    return pairs


def _print(event) -> None:
    parts = [f"step {event.step}/{event.total_steps}"]
    if event.loss is not None:
        parts.append(f"loss {event.loss:.4f}")
    if event.lr is not None:
        parts.append(f"lr {event.lr:.2e}")
    if event.tokens_per_s:
        parts.append(f"{event.tokens_per_s:.0f} tok/s")
    if event.eta_s is not None:
        parts.append(f"eta {event.eta_s:.0f} s")
    if event.message:
        parts.append(event.message)
    print("  ".join(parts), file=sys.stderr)
