"""Which task and label value a file's span labels stand for. No Django here.

One entry a line (the Import page) or a `--map` each (the command line):

    CLINENTITY=heart-rate:tachycardic    spans labelled CLINENTITY are evidence for the task
                                         heart-rate with the label value tachycardic
    EVENT[polarity=NEG]=fever:absent     only the EVENT spans whose attribute polarity is NEG
    TIMEX3=heart-rate                    evidence only: the label value is the one the note
                                         already has for that task (an earlier label import)
    ACTOR=-                              skipped
    *=-                                  every label no other entry names is skipped

The task is a task's slug, description or alias, as in a JSONL label import, in any Unicode
normal form ("diagnóstico" typed with a combining accent names the task described "diagnóstico").
A label with no entry is an error, so nothing is imported by chance, except a label of the form
`task:value` (what our exports write for gold spans), which stands for itself. An entry with
attributes wins over one without. Only gold spans are imported: predictions and review decisions
in a file are counted and skipped.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from webapp.lib.messages import Message, gettext_noop, message

SKIP = "-"
ANY = "*"
_ENTRY = re.compile(r"(?P<key>[^=\[\]]+?)(?:\[(?P<attr>[^=\]]+)=(?P<value>[^\]]*)\])?\s*=\s*(?P<target>.+)")


class MappingError(ValueError):
    """An entry that cannot be read; the message names it (`said`: its template and values,
    webapp.lib.messages, translated where it is shown; str(): the English)."""

    def __init__(self, said: Message):
        self.said = said
        super().__init__(str(said))


@dataclass(frozen=True)
class Target:
    task: str
    label: str | None  # None: evidence only (the label the note already has for the task)

    def __str__(self):
        return f"{self.task}:{self.label}" if self.label is not None else f"{self.task} (evidence only)"


@dataclass
class Mapping:
    entries: dict[tuple[str, str | None, str | None], Target | None] = field(default_factory=dict)
    skip_rest: bool = False

    def target(self, label: str, attributes: dict[str, str]) -> Target | None | str:
        """The span's Target; None: skipped; the string "unmapped" when no entry says."""
        for (key, attr, value), target in self.entries.items():
            if key == label and attr is not None and attributes.get(attr) == value:
                return target
        if (label, None, None) in self.entries:
            return self.entries[(label, None, None)]
        task, sep, value = label.partition(":")
        if sep and task and value:
            return Target(task, value)
        return None if self.skip_rest else "unmapped"

    def lines(self) -> list[str]:
        out = []
        for (key, attr, value), target in self.entries.items():
            left = f"{key}[{attr}={value}]" if attr is not None else key
            out.append(f"{left} -> {target if target is not None else 'skipped'}")
        if self.skip_rest:
            out.append("any other label -> skipped")
        return out


def parse_mapping(items) -> Mapping:
    """Entries as `KEY[attr=value]=TASK:LABEL`, `KEY=TASK` or `KEY=-` (module docstring)."""
    mapping = Mapping()
    for number, raw in enumerate(items, 1):
        item = raw.strip()
        if not item or item.startswith("#"):
            continue
        m = _ENTRY.fullmatch(item)
        if m is None:
            raise MappingError(
                message(
                    gettext_noop(
                        "mapping entry %(number)s (%(entry)s) must be LABEL=TASK:VALUE, LABEL=TASK (evidence only) "
                        "or LABEL=-"
                    ),
                    number=number,
                    entry=repr(item[:60]),
                )
            )
        key, target = m["key"].strip(), m["target"].strip()
        if key == ANY:
            if target != SKIP or m["attr"] is not None:
                raise MappingError(
                    message(gettext_noop("mapping entry %(number)s: '*' can only be skipped ('*=-')"), number=number)
                )
            mapping.skip_rest = True
            continue
        attr = m["attr"].strip() if m["attr"] is not None else None
        value = m["value"].strip() if m["value"] is not None else None
        if (key, attr, value) in mapping.entries:
            raise MappingError(
                message(gettext_noop("mapping entry %(number)s: %(key)s is mapped twice"), number=number, key=repr(key))
            )
        if target == SKIP:
            mapping.entries[(key, attr, value)] = None
            continue
        task, sep, label = target.partition(":")
        if not task.strip() or (sep and not label.strip()):
            raise MappingError(
                message(
                    gettext_noop("mapping entry %(number)s: the task, or the label value after ':', is empty"),
                    number=number,
                )
            )
        task = unicodedata.normalize("NFC", task.strip())  # as descriptions are stored, however it was typed
        mapping.entries[(key, attr, value)] = Target(task, label.strip() if sep else None)
    return mapping
