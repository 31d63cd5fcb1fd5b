"""Messages kept as a template and its values, so that a page translates them where it shows them,
in its reader's language, while the import that made them ran in a worker with none. No Django here.

`gettext_noop("duplicate id %(id)s (first on line %(first)s)")` marks a template for the catalogs
(Django's makemessages extracts it, as xgettext does by default) and returns it unchanged;
`Message(template, params)` keeps it with its values: file names, line numbers, ids, sizes,
offsets, field and format names, never translated. A value may itself be a Message (a phrase such
as "an array"), translated with the one that holds it. `str(message)` is the English text, the same
as the f-string it replaced; `as_json()` is what a job's row stores (`from_json` reads it back).
A template without values is shown as it is written (no % formatting), so a plain English string
(an exception's text) is a Message too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def gettext_noop(message: str) -> str:
    """A template marked for translation where it is shown (the catalogs' extraction finds it)."""
    return message


@dataclass(frozen=True)
class Message:
    template: str
    params: tuple[tuple[str, object], ...] = ()  # (name, value): str, int, None or a Message

    def __str__(self) -> str:
        return self.render(lambda template: template)

    def render(self, translate: Callable[[str], str]) -> str:
        """The text with `translate` applied to this template and to every Message among its values;
        the English template where a translation does not fit its values."""
        if not self.params:
            return translate(self.template)
        values = {name: value.render(translate) if isinstance(value, Message) else value for name, value in self.params}
        try:
            return translate(self.template) % values
        except (KeyError, ValueError, TypeError):
            return self.template % values

    def as_json(self) -> dict:
        return {
            "message": self.template,
            "params": {name: value.as_json() if isinstance(value, Message) else value for name, value in self.params},
        }

    @classmethod
    def from_json(cls, data: dict) -> Message:
        params = data.get("params") or {}
        return cls(
            str(data.get("message", "")),
            tuple((name, cls.from_json(value) if isinstance(value, dict) else value) for name, value in params.items()),
        )


def message(template: str, **params) -> Message:
    """`template` and its values; a value that is a Message is translated with it."""
    return Message(template, tuple(params.items()))


def as_message(text: str | Message, params: dict | None = None) -> Message:
    """A Message of `text`: itself if it is one, else the template `text` with `params`."""
    if isinstance(text, Message):
        return text
    return Message(str(text), tuple((params or {}).items()))


def mapped(text: str | Message, change: Callable[[str], str]) -> Message:
    """The message with `change` applied to its template and every string value (nested ones too)."""
    text = as_message(text)
    return Message(
        change(text.template),
        tuple(
            (name, mapped(v, change) if isinstance(v, Message) else change(v) if isinstance(v, str) else v)
            for name, v in text.params
        ),
    )


# How a JSON value is named in a message (ml.jsonl.json_kind's words), translated where shown.
KINDS = {
    "an object": gettext_noop("an object"),
    "an array": gettext_noop("an array"),
    "a string": gettext_noop("a string"),
    "a boolean": gettext_noop("a boolean"),
    "null": gettext_noop("null"),
    "a number": gettext_noop("a number"),
}


def phrase(text: str) -> Message | str:
    """A phrase from a fixed set (KINDS, json's messages) as a Message translated where shown; any
    other text as it is."""
    return Message(text) if text in KINDS or text in JSON_REASONS else text


# Python's json module's reasons (json.decoder and its C scanner), as ml.jsonl.parse_line says them.
JSON_REASONS = {
    gettext_noop("Expecting value"),
    gettext_noop("Expecting property name enclosed in double quotes"),
    gettext_noop("Expecting ':' delimiter"),
    gettext_noop("Expecting ',' delimiter"),
    gettext_noop("Unterminated string starting"),
    gettext_noop("Invalid control character"),
    gettext_noop("Invalid \\escape"),
    gettext_noop("Invalid \\uXXXX escape"),
    gettext_noop("Extra data"),
    gettext_noop("Illegal trailing comma before end of object"),
    gettext_noop("Illegal trailing comma before end of array"),
}
