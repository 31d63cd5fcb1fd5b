"""`python -m ml synth`: write a synthetic emergency-department corpus with gold labels.

    python -m ml synth --n 1000 --seed 0 --language mixed \\
        --notes-out notes.jsonl --annotations-out annotations.jsonl

Note i depends only on (seed, i), so a large corpus can be written in pieces with --start and
concatenated (e.g. one process per core: --start 0 --n 500000, --start 500000 --n 500000).
"""

import argparse
import sys

from ml.synthetic import LANGUAGES, write_corpus


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="write a synthetic ED corpus (notes + gold annotations, JSONL)",
        description="Write a synthetic emergency-department corpus (Italian/English notes) with gold labels.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=1000, help="number of notes")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed")
    parser.add_argument("--language", choices=LANGUAGES, default="en", help="language; mixed: about half each")
    parser.add_argument("--start", type=int, default=0, help="index of the first note (to write a corpus in pieces)")
    parser.add_argument("--typo-rate", type=float, default=0.02, help="typos per word, never in evidence")
    parser.add_argument("--min-words", type=int, default=80, help="shortest note, in words")
    parser.add_argument("--max-words", type=int, default=600, help="longest note, in words (at least ~160)")
    parser.add_argument("--no-unknown", action="store_true", help="leave out 'unknown' labels from the annotations")
    parser.add_argument("--notes-out", required=True, help="notes JSONL: {id, text, metadata} per line")
    parser.add_argument("--annotations-out", required=True, help="annotations JSONL: {note_id, task, label, evidence}")
    parser.set_defaults(func=run)


def run(args) -> int:
    try:
        stats = write_corpus(
            args.notes_out,
            args.annotations_out,
            args.n,
            include_unknown=not args.no_unknown,
            seed=args.seed,
            language=args.language,
            start=args.start,
            typo_rate=args.typo_rate,
            min_words=args.min_words,
            max_words=args.max_words,
        )
    except ValueError as exc:
        print(f"synth: {exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {stats['notes']} notes to {args.notes_out} and {stats['annotations']} annotations to "
        f"{args.annotations_out} in {stats['seconds']:.1f} s ({stats['notes_per_second']:.0f} notes/s)"
    )
    return 0
