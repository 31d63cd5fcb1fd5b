"""The neutral document every format reads into and writes from. No Django here.

A `Document` is one note: its id, its text (Unicode code points) and its spans. A `Span` is a
label over one or more half-open character ranges `[start, end)` of the text (more than one:
a discontinuous span, as brat's `T1 Type 0 4;9 12`), with string attributes, the `source` it
comes from (gold evidence, a model's prediction (a peak), a reviewer's decision on a peak) and,
when known, the reviewer or annotator who made it. Offsets are always code points here; a format
that counts UTF-16 code units converts at its edge (`offsets`).

`check_spans(document)` lists what is wrong with the spans against the text (each problem says
which span and why); readers call it so a bad offset is refused where it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from webapp.lib.messages import Message, gettext_noop, message

SOURCES = ("gold", "prediction", "decision")
WITHOUT_FEATURE = "spans_without_feature"  # a Document's metadata: spans read without the chosen feature (XMI)

Range = tuple[int, int]


class FormatError(Exception):
    """Input a format cannot read: the message names the file, the line or record, and why.
    Never note text."""

    def __init__(self, source: str, where: str | None, reason: str):
        self.source, self.where, self.reason = source, where, reason
        super().__init__(f"{source} {where}: {reason}" if where else f"{source}: {reason}")


class UnsupportedFormat(ValueError):
    """A format name that is not in the registry; the message lists the supported ones."""


@dataclass(frozen=True)
class Span:
    ranges: tuple[Range, ...]
    label: str
    attributes: tuple[tuple[str, str], ...] = ()  # sorted (name, value) pairs: hashable, comparable
    source: str = "gold"
    reviewer: str = ""
    id: str = ""  # the span's id in its file (brat T1, an XMI id, a Label Studio result id); may be empty

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"unknown span source {self.source!r}; one of {', '.join(SOURCES)}")

    @classmethod
    def of(cls, ranges, label: str, attributes: dict | None = None, **kwargs) -> Span:
        """A span from lists (JSON) and a dict of attributes."""
        pairs = tuple(sorted((str(k), str(v)) for k, v in (attributes or {}).items()))
        return cls(tuple((int(s), int(e)) for s, e in ranges), label, pairs, **kwargs)

    @property
    def start(self) -> int:
        return min(s for s, _ in self.ranges)

    @property
    def end(self) -> int:
        return max(e for _, e in self.ranges)

    @property
    def attrs(self) -> dict[str, str]:
        return dict(self.attributes)

    def covered(self, text: str) -> str:
        return " ".join(text[s:e] for s, e in self.ranges)


@dataclass
class Document:
    id: str
    text: str
    spans: list[Span] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    where: str = ""  # where it was read: "file.jsonl line 3", "EN1.xmi"; for messages


def check_spans(doc: Document) -> list[Message]:
    """Each span: at least one range, integers, 0 <= start < end <= len(text), ranges in order and
    not overlapping one another; a non-empty label. Messages name the span, never the text (each a
    Message, its str() the English)."""
    problems = []
    n = len(doc.text)
    for i, span in enumerate(doc.spans, 1):
        name = span.id or i
        if not span.ranges:
            problems.append(message(gettext_noop("span %(span)s has no ranges"), span=name))
            continue
        if not span.label.strip():
            problems.append(message(gettext_noop("span %(span)s has an empty label"), span=name))
        previous_end = -1
        for s, e in span.ranges:
            if not (isinstance(s, int) and isinstance(e, int)):
                problems.append(message(gettext_noop("span %(span)s: offsets must be integers"), span=name))
            elif not 0 <= s < e:
                template = gettext_noop("span %(span)s: range %(range)s is empty or negative")
                problems.append(message(template, span=name, range=f"[{s}, {e})"))
            elif e > n:
                template = gettext_noop(
                    "span %(span)s: range %(range)s ends past the end of the text (%(length)s characters)"
                )
                problems.append(message(template, span=name, range=f"[{s}, {e})", length=n))
            elif s < previous_end:
                template = gettext_noop("span %(span)s: its ranges overlap or are out of order at %(range)s")
                problems.append(message(template, span=name, range=f"[{s}, {e})"))
            else:
                previous_end = e
                continue
            break
    return problems
