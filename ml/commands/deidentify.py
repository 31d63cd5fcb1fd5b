"""`python -m ml deidentify`: de-identify notes JSONL, one JSON object per note on standard output.

    python -m ml deidentify notes.jsonl --language it --known-field patient_name --known-field mrn \\
        --patient-field patient_id --surrogates > deidentified.jsonl

Input: JSON Lines, one note per line: `id` (a string or an integer), `text`, any other fields
are metadata (also read from a `metadata` object). `--known-field` names the metadata fields
whose values are identifiers the hospital already knows (the patient's name, the record number):
they are found wherever they occur, with their case, accent, order and initial variants.

Output, per note, in input order: {"id", "text": the de-identified text, "found": [{"type",
"start", "end"}, ...]} with start/end in the ORIGINAL text (half-open). On standard error, at
the end: one JSON summary {"notes", "notes_with_findings", "counts" per type, "seconds", ...}.
No found value is printed anywhere, also not in an error message.

The whole file is checked before anything is written: a bad line stops the command with
"line N: why" and an empty standard output.

--tags (the default) writes "[NAME]", "[DATE]", ...; --surrogates writes consistent stand-ins:
the same surrogate for one identity in all of a patient's notes (the patient is --patient-field's
value; without it every note is its own patient) and dates moved by one shift per patient. The
surrogates are keyed by a secret read from the environment variable --secret-env (default
DEID_SECRET, at least 16 characters): the same secret gives the same surrogates in every run, so
keep it as you keep the data's keys; without it --surrogates refuses to run.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter

from ml.deid.types import LANGUAGES, DeidConfig
from ml.jsonl import JsonlError, json_kind, read_jsonl

MIN_SECRET = 16


class Refusal(Exception):
    """A reason to stop before writing anything (printed as "error: ...")."""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "deidentify",
        help="de-identify notes JSONL: identifiers found and replaced by tags or surrogates",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("notes", help="notes JSONL ({id, text, metadata fields...}); '-' for standard input")
    parser.add_argument("--language", required=True, choices=LANGUAGES, help="the notes' language")
    parser.add_argument(
        "--known-field",
        action="append",
        default=[],
        metavar="FIELD",
        help="a metadata field whose value is a known identifier (patient name, record number); repeatable",
    )
    parser.add_argument(
        "--patient-field",
        metavar="FIELD",
        help="the metadata field naming the patient: surrogates and date shifts are kept per patient "
        "(default: each note is its own patient)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--surrogates", dest="mode", action="store_const", const="surrogates", help="consistent stand-ins"
    )
    mode.add_argument("--tags", dest="mode", action="store_const", const="tags", help="[NAME], [DATE]... (default)")
    parser.set_defaults(mode="tags")
    parser.add_argument("--allow-list", metavar="FILE", help="words never replaced, one a line (eponyms, drugs)")
    parser.add_argument("--deny-list", metavar="FILE", help="words always replaced, one a line (the ward's own)")
    parser.add_argument(
        "--record-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help=r"a regular expression of the project's record or accession numbers, e.g. 'RIC-\d{6}'; repeatable",
    )
    parser.add_argument("--ner-model-dir", metavar="DIR", help="a local spaCy or transformers model folder (optional)")
    parser.add_argument(
        "--secret-env", default="DEID_SECRET", metavar="VAR", help="environment variable holding the surrogate secret"
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    started = time.perf_counter()
    try:
        secret = surrogate_secret(args)
        config = DeidConfig(
            language=args.language,
            known_fields=tuple(args.known_field),
            record_patterns=tuple(checked_pattern(p) for p in args.record_pattern),
            allow_list=frozenset(word_list(args.allow_list, "--allow-list")),
            deny_list=frozenset(word_list(args.deny_list, "--deny-list")),
            ner_model_dir=args.ner_model_dir,
        )
        notes = list_of_notes(args) if args.notes == "-" else None
        if notes is None:
            for _ in checked_notes(args):  # the whole file first: nothing is written for a bad one
                pass
    except (Refusal, JsonlError) as exc:
        return fail(exc)

    from ml.deid.detector import Detector
    from ml.deid.replacing import Replacer

    detector = Detector(config)
    replacer = Replacer(args.mode, args.language, secret)
    counts: Counter = Counter()
    done = with_findings = 0
    out = sys.stdout
    try:
        for note in notes if notes is not None else checked_notes(args):
            findings = detector.find(note["text"], known=note["known"])
            replaced = replacer.replace(note["text"], findings, patient=note["patient"])
            out.write(
                json.dumps(
                    {
                        "id": note["id"],
                        "text": replaced.text,
                        "found": [{"type": f.type, "start": f.start, "end": f.end} for f in findings],
                    },
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                + "\n"
            )
            counts.update(f.type for f in findings)
            done += 1
            with_findings += bool(findings)
        out.flush()
    except JsonlError as exc:  # the file changed between the check and the work
        return fail(exc)
    except BrokenPipeError:
        return 1
    seconds = time.perf_counter() - started
    summary = {
        "notes": done,
        "notes_with_findings": with_findings,
        "counts": dict(sorted(counts.items())),
        "findings": sum(counts.values()),
        "mode": args.mode,
        "language": args.language,
        "seconds": round(seconds, 3),
        "notes_per_second": round(done / seconds, 1) if seconds > 0 else None,
    }
    print(json.dumps(summary), file=sys.stderr)
    return 0


def fail(exc: Exception) -> int:
    if isinstance(exc, JsonlError):
        where = f"{exc.path}: line {exc.line_no}" if exc.line_no else exc.path
        message = f"{where}: {exc.reason}"
    else:
        message = str(exc)
    print(f"error: {message}; nothing written", file=sys.stderr)
    return 2


def surrogate_secret(args) -> bytes:
    if args.mode != "surrogates":
        return b""
    secret = os.environ.get(args.secret_env, "")
    if not secret:
        raise Refusal(
            f"--surrogates needs a secret: set the environment variable {args.secret_env} to a random string of "
            f"at least {MIN_SECRET} characters, kept apart from the data (the same secret gives the same "
            "surrogates in every run); or use --tags"
        )
    if len(secret) < MIN_SECRET:
        raise Refusal(f"the secret in {args.secret_env} is too short: use at least {MIN_SECRET} random characters")
    return secret.encode("utf-8")


def checked_pattern(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise Refusal(f"--record-pattern {pattern!r} is not a regular expression ({exc})") from None
    return pattern


def word_list(path: str | None, option: str) -> list[str]:
    """One term a line; blank lines and lines starting with '#' are skipped."""
    if not path:
        return []
    try:
        with open(path, encoding="utf-8-sig") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise Refusal(f"{option} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise Refusal(f"{option} {path}: not UTF-8 text") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def list_of_notes(args) -> list[dict]:
    return list(checked_notes(args))


def checked_notes(args):
    """Each note as {"id", "text", "known": {field: value}, "patient"}, checked; JsonlError for
    the first bad line. The messages name fields, never their values."""
    seen: set[str] = set()
    for line_no, obj in read_jsonl(args.notes):
        note_id = obj.get("id")
        if isinstance(note_id, bool) or not isinstance(note_id, (str, int)) or note_id == "":
            raise JsonlError(args.notes, line_no, f"'id' must be a non-empty string or an integer, not {kind(note_id)}")
        if str(note_id) in seen:
            raise JsonlError(args.notes, line_no, f"note id {note_id!r} appears twice")
        seen.add(str(note_id))
        text = obj.get("text")
        if not isinstance(text, str):
            raise JsonlError(args.notes, line_no, f"'text' must be a string, not {kind(text)}")
        metadata = obj.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise JsonlError(args.notes, line_no, f"'metadata' must be an object, not {kind(metadata)}")
        known = {}
        for name in args.known_field:
            value = field_value(obj, name)
            if value is None or value == "":
                continue
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise JsonlError(args.notes, line_no, f"known field {name!r} must be a string or a number")
            known[name] = str(value)
        patient = str(note_id)
        if args.patient_field:
            value = field_value(obj, args.patient_field)
            if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                raise JsonlError(
                    args.notes,
                    line_no,
                    f"the patient field {args.patient_field!r} must be a non-empty string or an integer "
                    f"(--patient-field), not {kind(value)}",
                )
            patient = str(value)
        yield {"id": note_id, "text": text, "known": known, "patient": patient}


def field_value(obj: dict, name: str):
    """A metadata field: at the top level of the note, else inside its `metadata` object."""
    if name in obj:
        return obj[name]
    metadata = obj.get("metadata")
    return metadata.get(name) if isinstance(metadata, dict) else None


def kind(value) -> str:
    return "missing or null" if value is None else json_kind(value) if not isinstance(value, str) else "an empty string"
