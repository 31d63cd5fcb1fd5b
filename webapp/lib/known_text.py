"""English text a worker stored, shown in the reader's language: each text is matched against a
table of the English templates its writers format (`Known`), and the matching template's
translation is filled with the values read back from the text. No Django here: the caller passes
gettext and ngettext.

The writers format the same templates (`KNOWN.template % values`), so a stored line and its
template cannot drift apart; the API, the logs and the management commands read the stored
English as it is. A value named in `words` is itself looked up in the table (a phase, a reason, a
phrase ml wrote), so composed texts translate part by part; every other value (an id, a count, a
name, a worker, an exception's own words) is shown as stored. A text no template matches (an old
row, an exception's message) is shown as stored.

A template is marked for the catalogs where its table is made: `gettext_noop("...")` for one
form, this module's `ngettext(singular, plural, count)` and `pgettext(context, text)`, which only
build a Known and are named so that makemessages (xgettext's ngettext:1,2 and pgettext:1c,2
keywords) extracts their strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


@dataclass(frozen=True)
class Known:
    template: str  # English, with %(name)s placeholders
    plural: str = ""  # the English plural form; then `count` names the value that picks the form
    count: str = ""
    words: tuple[str, ...] = ()  # values that are themselves texts of the table
    context: str = ""  # msgctxt, for a short word that means two things

    def format(self, **values) -> str:
        """The English text, as a writer stores it (the plural form where `count` is not 1)."""
        template = self.plural if self.plural and str(values.get(self.count)) != "1" else self.template
        return template % values

    def patterns(self) -> list[re.Pattern]:
        return [_compile(t) for t in (self.template, self.plural) if t]


def _compile(template: str) -> re.Pattern:
    out, seen, at = [], set(), 0
    for m in _PLACEHOLDER.finditer(template):
        out.append(re.escape(template[at : m.start()]))
        name = m.group(1)
        if name is None:
            out.append("%")
        elif name in seen:
            out.append(f"(?P={name})")
        else:
            seen.add(name)
            out.append(f"(?P<{name}>.*?)")
        at = m.end()
    out.append(re.escape(template[at:]))
    return re.compile("".join(out), re.DOTALL)


def ngettext(singular: str, plural: str, count: str, words: tuple[str, ...] = ()) -> Known:
    """A template with a plural form, `count` the value that picks it (extracted as ngettext)."""
    return Known(singular, plural, count, words)


def pgettext(context: str, text: str) -> Known:
    """A word with a context (extracted as pgettext)."""
    return Known(text, context=context)


class KnownTexts:
    """A table of templates, tried in order (put the specific before the general)."""

    def __init__(self, known: Iterable[Known | str]):
        self.known = [k if isinstance(k, Known) else Known(k) for k in known]
        self._compiled = [(k, p) for k in self.known for p in k.patterns()]

    def __add__(self, other: KnownTexts) -> KnownTexts:
        return KnownTexts([*self.known, *other.known])

    def match(self, text: str):
        for known, pattern in self._compiled:
            if m := pattern.fullmatch(text):
                return known, m.groupdict()
        return None

    def recognises(self, text: str) -> bool:
        return isinstance(text, str) and self.match(text) is not None

    def render(
        self,
        text,
        translation,
        _depth: int = 0,
    ):
        """`text` in the language of `translation` (django.utils.translation: its gettext, ngettext,
        pgettext); as it is when no template matches."""
        if not isinstance(text, str) or not text or _depth > 8:
            return text
        found = self.match(text)
        if found is None:
            return text
        known, values = found
        for name in known.words:
            values[name] = self.render(values[name], translation, _depth + 1)
        if known.plural:
            try:
                number = int(str(values[known.count]).replace(",", ""))
            except ValueError:
                number = 2
            translated = translation.ngettext(known.template, known.plural, number)
        elif known.context:
            translated = translation.pgettext(known.context, known.template)
        else:
            translated = translation.gettext(known.template)
        if not values and "%" not in known.template:
            return translated
        try:
            return translated % values
        except (KeyError, ValueError, TypeError):
            return text
