"""Domain rules for tasks, labels and evidence spans, shared by model validation and import.

Plain Python, no database: each function returns a list of problems (empty when valid),
phrased without note text (offsets and lengths only), so they are safe to log and print.
On PostgreSQL the same rules are enforced again by triggers (migration 0002); on SQLite
these functions, called from `clean()` and the importer, are the only guard for cross-row rules.

Note metadata (`metadata_problems`) is checked whole before an import writes anything, since
the database refuses some of what JSON allows (PostgreSQL's jsonb cannot hold \\u0000) and a
refused row must not reach a log. The rules (docs/user-guide.md, "Importing data"):
- a JSON object of at most `max_bytes` bytes, written as compact UTF-8 JSON;
- keys: non-empty strings of at most 200 characters, without control characters;
- values: strings, finite numbers, booleans, null, and arrays and objects of these nested at
  most 10 levels deep;
- strings: no NUL nor any other control character (U+0000-U+001F, U+007F) but tab, line feed
  and carriage return, and no unpaired surrogate (a lone \\uD800 escape).
Problems name where in the metadata (`metadata["ward"][2]`), never a value.

Ids, task names, labels and corpus names are stricter than metadata strings (`hidden_character`):
no control character at all, no unpaired surrogate (psycopg cannot encode one; it comes from a
lone \\uD800 escape or a file name not in UTF-8), no invisible format character (U+200B,
the bidi controls such as U+202E, a byte order mark) and no line or paragraph separator: two
ids that look alike must be alike.

What a message shows of a value from the file goes through `quoted` (escaped, cut, between
quotes, so the audit log's reason categories leave it out) and every problem line through
`printable` (no control character can reach a page, a log or a jsonb column).
"""

import json
import math
import re
import unicodedata

from ml.jsonl import json_kind
from webapp.lib.import_limits import over_limit_message
from webapp.lib.messages import Message, gettext_noop, message

MAX_LABEL_LENGTH = 200
MAX_METADATA_KEY_LENGTH = 200
MAX_METADATA_DEPTH = 10
MAX_METADATA_PROBLEMS = 5  # per note: the first few say what to fix
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # C0 and DEL, but tab, LF and CR
_KEY_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_HIDDEN = {  # hidden_character's words, translated where a problem is shown
    "Cc": gettext_noop("the control character %(code)s at offset %(offset)s"),
    "Cs": gettext_noop("an unpaired surrogate %(code)s at offset %(offset)s"),
    "Cf": gettext_noop("the invisible format character %(code)s at offset %(offset)s"),
    "Zl": gettext_noop("the line separator %(code)s at offset %(offset)s"),
    "Zp": gettext_noop("the paragraph separator %(code)s at offset %(offset)s"),
}
SHOWN_CHARS = 40  # of a value quoted in a message


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
    return [str(problem) for problem in label_messages(label, options)]


def label_messages(label, options) -> list[Message]:
    """label_problems as Messages, translated where they are shown."""
    if not isinstance(label, str) or not label:
        return [Message(gettext_noop("label must be a non-empty string"))]
    if label not in options:
        allowed = ", ".join(repr(o) for o in options)
        template = gettext_noop("label %(label)s is not one of the task's options (%(allowed)s)")
        return [message(template, label=repr(label), allowed=allowed)]
    return []


def span_problems(evidence, text_length: int) -> list[str]:
    """Evidence: a list of [start, end) character offsets with 0 <= start < end <= text_length."""
    return [str(problem) for problem in span_messages(evidence, text_length)]


def span_messages(evidence, text_length: int) -> list[Message]:
    """span_problems as Messages, translated where they are shown."""
    if not isinstance(evidence, list):
        template = gettext_noop("evidence must be a list of [start, end] pairs, not %(type)s")
        return [message(template, type=type(evidence).__name__)]
    problems = []
    for i, span in enumerate(evidence):
        if (
            not isinstance(span, list | tuple)
            or len(span) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in span)
        ):
            problems.append(
                message(gettext_noop("evidence[%(index)s] must be a pair of integers [start, end]"), index=i)
            )
            continue
        start, end = span
        where = {"index": i, "span": f"[{start}, {end})"}
        if start < 0:
            problems.append(
                message(gettext_noop("evidence[%(index)s] %(span)s starts before the text (start < 0)"), **where)
            )
        elif start >= end:
            template = gettext_noop("evidence[%(index)s] %(span)s is empty or reversed (start >= end)")
            problems.append(message(template, **where))
        elif end > text_length:
            template = gettext_noop("evidence[%(index)s] %(span)s ends past the text (length %(length)s)")
            problems.append(message(template, length=text_length, **where))
    return problems


def overlapping_spans(evidence) -> tuple[list, list] | None:
    """The first two spans of a valid evidence list that share characters, if any."""
    spans = sorted(evidence)
    for before, after in zip(spans, spans[1:]):
        if after[0] < before[1]:
            return list(before), list(after)
    return None


def metadata_problems(metadata, max_bytes: int) -> list[str]:
    """Note metadata, by the rules in the module docstring."""
    return [str(problem) for problem in metadata_messages(metadata, max_bytes)]


def metadata_messages(metadata, max_bytes: int) -> list[Message]:
    """metadata_problems as Messages, translated where they are shown."""
    if not isinstance(metadata, dict):
        return [
            message(
                gettext_noop("field '%(field)s' must be an object, not %(kind)s"),
                field="metadata",
                kind=Message(json_kind(metadata)),
            )
        ]
    problems: list[Message] = []
    _check_value(metadata, "metadata", 0, problems)
    if problems:
        return problems[:MAX_METADATA_PROBLEMS]
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > max_bytes:
        what = message(gettext_noop("field '%(field)s'"), field="metadata")
        return [over_limit_message(what, size, max_bytes, "IMPORT_MAX_METADATA_BYTES", "bytes")]
    return []


def _check_value(value, where: str, depth: int, problems: list[Message]) -> None:
    if len(problems) >= MAX_METADATA_PROBLEMS:
        return
    if isinstance(value, str):
        problems.extend(_string_problems(value, where))
    elif isinstance(value, float) and not math.isfinite(value):
        problems.append(message(gettext_noop("%(where)s is NaN or Infinity, which JSON does not allow"), where=where))
    elif isinstance(value, dict | list) and depth >= MAX_METADATA_DEPTH:
        problems.append(
            message(
                gettext_noop("%(where)s is nested more than %(most)s levels deep"), where=where, most=MAX_METADATA_DEPTH
            )
        )
    elif isinstance(value, dict):
        for key, item in value.items():
            key_problem = _key_problem(key)
            if key_problem:
                problems.append(message(gettext_noop("%(where)s has %(what)s"), where=where, what=key_problem))
            else:
                _check_value(item, f"{where}[{json.dumps(key, ensure_ascii=False)}]", depth + 1, problems)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]", depth + 1, problems)
    elif not (value is None or isinstance(value, bool | int | float)):
        problems.append(
            message(gettext_noop("%(where)s is %(type)s, not a JSON value"), where=where, type=type(value).__name__)
        )


def _key_problem(key) -> Message | str:
    if not isinstance(key, str) or not key:
        return Message(gettext_noop("an empty key") if key == "" else gettext_noop("a key that is not a string"))
    if len(key) > MAX_METADATA_KEY_LENGTH:
        return message(gettext_noop("a key longer than %(most)s characters"), most=MAX_METADATA_KEY_LENGTH)
    if _KEY_CONTROL.search(key) or _SURROGATE.search(key):
        return Message(gettext_noop("a key with a control character or an unpaired surrogate"))
    return ""


def _string_problems(text: str, where: str) -> list[Message]:
    control = _CONTROL.search(text)
    if control:
        char = control.group()
        if char == "\x00":
            template = gettext_noop("%(where)s contains a NUL character (\\u0000) at offset %(offset)s")
            return [message(template, where=where, offset=control.start())]
        template = gettext_noop("%(where)s contains the control character %(code)s at offset %(offset)s")
        return [message(template, where=where, code=f"U+{ord(char):04X}", offset=control.start())]
    surrogate = _SURROGATE.search(text)
    if surrogate:
        template = gettext_noop("%(where)s contains an unpaired surrogate (\\u escape) at offset %(offset)s")
        return [message(template, where=where, offset=surrogate.start())]
    return []


def hidden_character(value: str) -> Message | str:
    """'the invisible format character U+202E at offset 3' for the first character an id, a task,
    a label or a corpus name must not hold (module docstring), a Message whose str() is that; ""
    if there is none."""
    if value.isprintable():  # the usual case, in C: no Cc, Cf, Cs, Zl, Zp (nor Zs but the space)
        return ""
    for offset, char in enumerate(value):
        what = _HIDDEN.get(unicodedata.category(char))
        if what:
            return message(what, code=f"U+{ord(char):04X}", offset=offset)
    return ""


def quoted(value, limit: int = SHOWN_CHARS) -> str:
    """A value from the file as a message shows it: escaped, cut to `limit` characters, quoted."""
    value = str(value)
    return repr(value if len(value) <= limit else value[:limit] + "…")


def printable(text: str) -> str:
    """`text` with every character that is not printable written as its escape (\\x00, \\u202e)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def nfc(text: str) -> str:
    """Ids, task names and labels are compared in Unicode NFC form: "café" typed with a composed é or
    with e and a combining accent looks the same to people, so it is the same id to us."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


MAX_NAMES_SHOWN = 10


def shown_names(names: list[str]) -> list[str]:
    """Field names fit to show: the first few, each short, control characters escaped."""
    shown = [n if len(n) <= 40 and n.isprintable() else json.dumps(n[:40]) for n in names]
    if len(shown) > MAX_NAMES_SHOWN:
        shown = [*shown[:MAX_NAMES_SHOWN], f"and {len(shown) - MAX_NAMES_SHOWN} more"]
    return shown
