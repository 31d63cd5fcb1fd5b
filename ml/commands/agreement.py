"""`python -m ml agreement FILE.csv`: inter-reviewer agreement with bootstrap CIs (ml.agreement).

The CSV has a header with the columns `item`, `reviewer` and `label` (others are ignored); a
blank label is a missing judgement. With a `task` column as well, an item is (task, item) and
agreement is given per task under "tasks" beside the overall figures. The whole file is
checked before anything is computed: a missing column, a line with a blank item or reviewer,
or a reviewer judging the same item twice is reported with its line number (exit 2).
Prints one JSON object: alpha, kappa (mean pairwise), ac1, observed, each with `_ci`, the
counts, the reviewer pairs, each reviewer against the others' consensus, and diagnostics.

`python -m ml agreement --spans FILE.jsonl`: agreement on spans (ml.span_agreement). One JSON
object a line: `doc`, `annotator`, `label`, `start`, `end` (a half-open character range); a line
with `doc` and `annotator` only says the annotator annotated the document and marked nothing
there; an optional `text` on any line of a document gives its text (alpha then counts its tokens,
and a span must lie within it). The whole file is checked first and every bad line is reported
with its number and why (exit 2). Prints one JSON object: f1_exact, f1_overlap, alpha_tokens,
each with `_ci`, per_label (each label's F1 and its alpha against the rest, with `_ci`), the
pairs of annotators, the counts and diagnostics.
"""

from __future__ import annotations

import csv
import json
import sys

from ml.agreement import AgreementSettings, agreement, table_from_judgements
from ml.jsonl import JsonlError, LineError, json_kind, parse_line
from ml.span_agreement import Span, SpanSettings, span_agreement

REQUIRED = ("item", "reviewer", "label")
MAX_PROBLEMS = 20


class CsvProblems(ValueError):
    """Problems of a judgements file, each 'FILE line N: why'."""

    def __init__(self, problems: list[str]):
        shown = problems[:MAX_PROBLEMS]
        more = len(problems) - len(shown)
        super().__init__("\n".join(shown + ([f"... and {more} more"] if more else [])))
        self.problems = problems


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "agreement", help="inter-reviewer agreement of a judgements CSV", description=__doc__.splitlines()[0]
    )
    parser.add_argument("file", nargs="?", help="CSV with columns item, reviewer, label (and optionally task)")
    parser.add_argument(
        "--spans", metavar="FILE.jsonl", help="agreement on spans: doc, annotator, label, start, end a line"
    )
    defaults = AgreementSettings()
    parser.add_argument("--seed", type=int, default=defaults.seed, help="bootstrap seed (default 0)")
    parser.add_argument(
        "--resamples",
        type=int,
        default=defaults.n_resamples,
        help=f"bootstrap resamples (default {defaults.n_resamples})",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    if args.resamples < 1:
        print("error: --resamples must be at least 1", file=sys.stderr)
        return 2
    if (args.file is None) == (args.spans is None):
        print("error: give a judgements CSV or --spans FILE.jsonl (one of them)", file=sys.stderr)
        return 2
    if args.spans is not None:
        return run_spans(args)
    try:
        rows, has_task = read_judgements(args.file)
    except (CsvProblems, OSError, UnicodeDecodeError, csv.Error) as exc:
        message = f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) else str(exc)
        print(f"error: {message}", file=sys.stderr)
        return 2
    settings = AgreementSettings(n_resamples=args.resamples, seed=args.seed)
    result = _compute(rows, settings)
    if has_task:
        tasks = sorted({task for task, _, _, _ in rows})
        result["tasks"] = {task: _compute([r for r in rows if r[0] == task], settings) for task in tasks}
    print(json.dumps(result, indent=2))
    return 0


def read_judgements(path) -> tuple[list[tuple[str, str, str, str]], bool]:
    """(task, item, reviewer, label) rows of the file (task "" without a task column), and
    whether it has a task column; raises CsvProblems naming every bad line."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = [name.strip() for name in reader.fieldnames or []]
        missing = [name for name in REQUIRED if name not in header]
        if missing:
            raise CsvProblems([f"{path} line 1: missing column(s) {', '.join(missing)} (header: {', '.join(header)})"])
        reader.fieldnames = header
        has_task = "task" in header
        rows, problems, seen = [], [], {}
        for row in reader:
            line = reader.line_num
            task, item, reviewer = ((row.get(k) or "").strip() for k in ("task", "item", "reviewer"))
            label = (row.get("label") or "").strip()
            blank = [name for name, value in (("item", item), ("reviewer", reviewer)) if not value]
            if has_task and not task:
                blank.insert(0, "task")
            if blank:
                problems.append(f"{path} line {line}: blank {' and '.join(blank)}")
                continue
            key = (task, item, reviewer)
            if key in seen:
                problems.append(
                    f"{path} line {line}: reviewer {reviewer!r} already judged item {item!r} on line {seen[key]}"
                )
                continue
            seen[key] = line
            rows.append((task, item, reviewer, label))
    if problems:
        raise CsvProblems(problems)
    if not rows:
        raise CsvProblems([f"{path}: no judgements"])
    return rows, has_task


def _compute(rows, settings: AgreementSettings) -> dict:
    items, reviewers, table = table_from_judgements(
        ((task, item), reviewer, label) for task, item, reviewer, label in rows
    )
    return agreement(table, reviewers, settings=settings).to_dict()


SPAN_FIELDS = ("label", "start", "end")


def run_spans(args) -> int:
    try:
        spans, annotated, texts = read_spans(args.spans)
    except (CsvProblems, JsonlError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    settings = SpanSettings(n_resamples=args.resamples, seed=args.seed)
    print(json.dumps(span_agreement(spans, annotated, texts, settings).to_dict(), indent=2))
    return 0


def read_spans(path) -> tuple[list[Span], dict[str, set[str]], dict[str, str]]:
    """The spans of a JSONL file, who annotated each document, and the documents' texts given;
    raises CsvProblems naming every bad line (JsonlError when the file cannot be read)."""
    spans, problems, annotated, texts = [], [], {}, {}
    seen: dict[tuple, int] = {}
    where: dict[str, int] = {}  # doc -> the line that gave its text
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise JsonlError(path, None, f"cannot open ({exc.strerror})") from None
    with handle:
        for line_no, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                problems.append(f"{path} line {line_no}: not UTF-8 text ({exc.reason} at byte {exc.start})")
                continue
            if not line.strip():
                continue
            try:
                obj = parse_line(line)
            except LineError as exc:
                problems.append(f"{path} line {line_no}: {exc}")
                continue
            why = _span_problem(obj)
            if why:
                problems.append(f"{path} line {line_no}: {why}")
                continue
            doc, annotator = str(obj["doc"]), obj["annotator"].strip()
            annotated.setdefault(doc, set()).add(annotator)
            if "text" in obj:
                if doc in texts and texts[doc] != obj["text"]:
                    problems.append(f"{path} line {line_no}: doc {doc!r} has another text on line {where[doc]}")
                    continue
                texts[doc], where[doc] = obj["text"], where.get(doc, line_no)
            if "label" not in obj:
                continue
            span = Span(doc, annotator, obj["label"].strip(), obj["start"], obj["end"])
            key = (doc, annotator, span.label, span.start, span.end)
            if key in seen:
                problems.append(f"{path} line {line_no}: the same span as line {seen[key]}")
                continue
            seen[key] = line_no
            spans.append((line_no, span))
    for line_no, span in spans:
        if span.doc in texts and span.end > len(texts[span.doc]):
            problems.append(
                f"{path} line {line_no}: end {span.end} is past the end of doc {span.doc!r}'s text "
                f"({len(texts[span.doc])} characters)"
            )
    if problems:
        raise CsvProblems(problems)
    if not annotated:
        raise CsvProblems([f"{path}: no spans"])
    return [span for _, span in spans], annotated, texts


def _span_problem(obj: dict) -> str:
    """Why a line is no span (or no 'annotated, nothing marked' line); "" when it is one."""
    for name in ("doc", "annotator"):
        if name not in obj:
            return f"missing {name!r}"
    if not isinstance(obj["doc"], (str, int)) or isinstance(obj["doc"], bool) or str(obj["doc"]).strip() == "":
        return f"'doc' must be a non-empty string or an integer, got {json_kind(obj['doc'])}"
    if not isinstance(obj["annotator"], str) or not obj["annotator"].strip():
        return "'annotator' must be a non-empty string"
    if "text" in obj and not isinstance(obj["text"], str):
        return f"'text' must be a string, got {json_kind(obj['text'])}"
    given = [name for name in SPAN_FIELDS if name in obj]
    if not given:
        return ""
    if len(given) < len(SPAN_FIELDS):
        missing = [name for name in SPAN_FIELDS if name not in obj]
        return f"a span needs label, start and end: missing {', '.join(map(repr, missing))}"
    if not isinstance(obj["label"], str) or not obj["label"].strip():
        return "'label' must be a non-empty string"
    for name in ("start", "end"):
        value = obj[name]
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{name!r} must be an integer, got {json_kind(value)}"
    if obj["start"] < 0:
        return f"'start' is negative ({obj['start']})"
    if obj["end"] <= obj["start"]:
        return f"'end' ({obj['end']}) must be greater than 'start' ({obj['start']})"
    return ""
