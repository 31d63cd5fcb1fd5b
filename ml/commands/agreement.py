"""`python -m ml agreement FILE.csv`: inter-reviewer agreement with bootstrap CIs (ml.agreement).

The CSV has a header with the columns `item`, `reviewer` and `label` (others are ignored); a
blank label is a missing judgement. With a `task` column as well, an item is (task, item) and
agreement is given per task under "tasks" beside the overall figures. The whole file is
checked before anything is computed: a missing column, a line with a blank item or reviewer,
or a reviewer judging the same item twice is reported with its line number (exit 2).
Prints one JSON object: alpha, kappa (mean pairwise), ac1, observed, each with `_ci`, the
counts, the reviewer pairs, each reviewer against the others' consensus, and diagnostics.
"""

from __future__ import annotations

import csv
import json
import sys

from ml.agreement import AgreementSettings, agreement, table_from_judgements

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
    parser.add_argument("file", help="CSV with columns item, reviewer, label (and optionally task)")
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
