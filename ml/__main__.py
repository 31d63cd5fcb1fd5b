"""Command line: `python -m ml <command> ...`. Each command lives in ml/commands/<name>.py
and exposes `register(subparsers)`, which adds its parser and sets `func=run`."""
import argparse
import importlib
import sys

COMMANDS = ["convert", "relevance", "peaks", "examples", "localisation", "synth", "train"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ml", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"ml.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ml.commands.{name}":
                continue  # command not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
