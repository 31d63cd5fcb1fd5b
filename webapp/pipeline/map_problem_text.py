"""A map import's refused lines and its error, written by the worker in English (ml.relevance.imported,
webapp.pipeline.mapimport and mapimport_jobs; the API, the command and the logs read them so), in
the reader's language on the import's page: each reason is recognised with its values (line and
token positions, lengths, counts, a corpus's name), which stay as stored; a reason not recognised
is shown as stored. The English forms here follow the f-strings that write them."""

import re

from django.utils.translation import gettext, gettext_noop

# (the stored English as a pattern, the message it is: gettext_noop marks it for the catalogs)
_PATTERNS = [
    (
        re.compile(r"unknown note: corpus (?P<corpus>.+) has no note with this external id"),
        gettext_noop("unknown note: corpus %(corpus)s has no note with this external id"),
    ),
    (
        re.compile(r"unknown task: no task of this slug or description that the corpus's project may use"),
        gettext_noop("unknown task: no task of this slug or description that the corpus's project may use"),
    ),
    (
        re.compile(r"the same note and task as line (?P<line>\d+)"),
        gettext_noop("the same note and task as line %(line)s"),
    ),
    (
        re.compile(
            r"tokens differ from the model's tokenizer at token (?P<index>\d+): expected a token of "
            r"(?P<expected>\d+) character\(s\) of the note, given one of (?P<given>\d+) "
            r"character\(s\) \((?P<n>\d+) note tokens expected, (?P<count>\d+) given\)"
        ),
        gettext_noop(
            "tokens differ from the model's tokenizer at token %(index)s: expected a token of "
            "%(expected)s character(s) of the note, given one of %(given)s character(s) (%(n)s note "
            "tokens expected, %(count)s given)"
        ),
    ),
    (
        re.compile(
            r"tokens differ from the model's tokenizer at token (?P<index>\d+): (?P<n>\d+) note "
            r"tokens expected, (?P<count>\d+) given"
        ),
        gettext_noop(
            "tokens differ from the model's tokenizer at token %(index)s: %(n)s note tokens expected, %(count)s given"
        ),
    ),
    (
        re.compile(
            r"input_ids differ from the product's prompt at position (?P<index>\d+) \((?P<n>\d+) "
            r"prompt tokens expected, the note's last at (?P<last>\d+); (?P<count>\d+) given\)"
        ),
        gettext_noop(
            "input_ids differ from the product's prompt at position %(index)s (%(n)s prompt tokens "
            "expected, the note's last at %(last)s; %(count)s given)"
        ),
    ),
    (
        re.compile(
            r"input_ids differ from the product's prompt at position (?P<index>\d+): they end before "
            r"the note's last token \((?P<n>\d+) prompt tokens expected, (?P<count>\d+) given\)"
        ),
        gettext_noop(
            "input_ids differ from the product's prompt at position %(index)s: they end before the "
            "note's last token (%(n)s prompt tokens expected, %(count)s given)"
        ),
    ),
    (
        re.compile(r"(?P<field>\w+): score (?P<index>\d+) is not finite \(NaN or infinity\)"),
        gettext_noop("%(field)s: score %(index)s is not finite (NaN or infinity)"),
    ),
    (
        re.compile(r"(?P<field>\w+): score (?P<index>\d+) is not a number"),
        gettext_noop("%(field)s: score %(index)s is not a number"),
    ),
    (re.compile(r"(?P<a>\d+) tokens but (?P<b>\d+) scores"), gettext_noop("%(a)s tokens but %(b)s scores")),
    (
        re.compile(r"(?P<a>\d+) input_ids but (?P<b>\d+) relevance values"),
        gettext_noop("%(a)s input_ids but %(b)s relevance values"),
    ),
    (
        re.compile(r"missing field note \(the note's external id in the corpus\)"),
        gettext_noop("missing field note (the note's external id in the corpus)"),
    ),
    (
        re.compile(r"missing field task \(the task's slug or description\)"),
        gettext_noop("missing field task (the task's slug or description)"),
    ),
    (
        re.compile(
            r"give exactly one of tokens \(with scores\), spans, offsets \(with scores\) or input_ids "
            r"\(with relevance\)"
        ),
        gettext_noop(
            "give exactly one of tokens (with scores), spans, offsets (with scores) or input_ids (with relevance)"
        ),
    ),
    (
        re.compile(r"invalid JSON: (?P<reason>.+) at column (?P<column>\d+)"),
        gettext_noop("invalid JSON: %(reason)s at column %(column)s"),
    ),
    (
        re.compile(
            r"span (?P<index>\d+) \((?P<start>\d+)-(?P<end>\d+)\) overlaps no token of the model's "
            r"prompt \(a truncated note\?\)"
        ),
        gettext_noop("span %(index)s (%(start)s-%(end)s) overlaps no token of the model's prompt (a truncated note?)"),
    ),
    (
        re.compile(r"span (?P<index>\d+) ends at (?P<end>\d+), past the note's (?P<length>\d+) characters"),
        gettext_noop("span %(index)s ends at %(end)s, past the note's %(length)s characters"),
    ),
    (
        re.compile(r"cannot read model (?P<model>.+)'s tokenizer: (?P<error>.*)", re.S),
        gettext_noop("cannot read model %(model)s's tokenizer: %(error)s"),
    ),
    (re.compile(r"the file holds no map"), gettext_noop("the file holds no map")),
    (
        re.compile(
            r"this note and task already have an imported map of this configuration for this model "
            r"version \(import with replace to replace it\)"
        ),
        gettext_noop(
            "this note and task already have an imported map of this configuration for this model "
            "version (import with replace to replace it)"
        ),
    ),
    (
        re.compile(r"the uploaded file is no longer stored; upload it again"),
        gettext_noop("the uploaded file is no longer stored; upload it again"),
    ),
    (
        re.compile(r"not UTF-8 text \((?P<reason>.+) at byte (?P<byte>\d+)\)"),
        gettext_noop("not UTF-8 text (%(reason)s at byte %(byte)s)"),
    ),
    (
        re.compile(
            r"The map import stopped on an unexpected error \((?P<type>[A-Za-z_][\w.]*)\); nothing "
            r"was imported\. Press Resume to try again, or import the file with manage\.py "
            r"import_maps to see more\."
        ),
        gettext_noop(
            "The map import stopped on an unexpected error (%(type)s); nothing was imported. Press "
            "Resume to try again, or import the file with manage.py import_maps to see more."
        ),
    ),
]


def shown(reason: str) -> str:
    """A stored reason (or a job's error) in the active language; as stored when not recognised."""
    for pattern, msgid in _PATTERNS:
        match = pattern.fullmatch(reason or "")
        if match:
            return gettext(msgid) % match.groupdict()
    return reason
