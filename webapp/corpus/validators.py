"""Domain rules for tasks, labels and evidence spans, shared by model validation and import.

Plain Python, no database: each function returns a list of problems (empty when valid),
phrased without note text (offsets and lengths only), so they are safe to log and print.
On PostgreSQL the same rules are enforced again by triggers (migration 0002); on SQLite
these functions, called from `clean()` and the importer, are the only guard for cross-row rules.
"""
MAX_LABEL_LENGTH = 200


def option_problems(options) -> list[str]:
    """A task's label options: a non-empty list of distinct, non-empty strings."""
    if not isinstance(options, list):
        return [f"options must be a list of labels, not {type(options).__name__}"]
    if not options:
        return ["options must not be empty"]
    problems = []
    seen = set()
    for i, option in enumerate(options):
        if not isinstance(option, str) or not option.strip():
            problems.append(f"option {i} must be a non-empty string")
        elif len(option) > MAX_LABEL_LENGTH:
            problems.append(f"option {i} is longer than {MAX_LABEL_LENGTH} characters")
        elif option in seen:
            problems.append(f"option {option!r} is listed twice")
        seen.add(option if isinstance(option, str) else None)
    return problems


def label_problems(label, options) -> list[str]:
    """The label must be one of the task's options (compared exactly, case included)."""
    if not isinstance(label, str) or not label:
        return ["label must be a non-empty string"]
    if label not in options:
        allowed = ", ".join(repr(o) for o in options)
        return [f"label {label!r} is not one of the task's options ({allowed})"]
    return []


def span_problems(evidence, text_length: int) -> list[str]:
    """Evidence: a list of [start, end) character offsets with 0 <= start < end <= text_length."""
    if not isinstance(evidence, list):
        return [f"evidence must be a list of [start, end] pairs, not {type(evidence).__name__}"]
    problems = []
    for i, span in enumerate(evidence):
        if (
            not isinstance(span, list | tuple)
            or len(span) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in span)
        ):
            problems.append(f"evidence[{i}] must be a pair of integers [start, end]")
            continue
        start, end = span
        if start < 0:
            problems.append(f"evidence[{i}] [{start}, {end}) starts before the text (start < 0)")
        elif start >= end:
            problems.append(f"evidence[{i}] [{start}, {end}) is empty or reversed (start >= end)")
        elif end > text_length:
            problems.append(f"evidence[{i}] [{start}, {end}) ends past the text (length {text_length})")
    return problems
