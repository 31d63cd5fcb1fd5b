"""The agreement diagnostics of the review report, as ml.agreement and ml.span_agreement write them
(English, stored with the report's figures and written so into its CSV, which scripts read), shown
on the report page in the reader's language (webapp.lib.known_text). ml knows nothing of Django, so
its templates are listed here once more, marked for the catalogs; a test checks that this table
lists every one of their TEMPLATES. A decision's label (kept, rejected: webapp.review.reports) is
translated, quotes kept; a task's slug, a reviewer's or an annotator's name (quoted as ml quotes
them), a count, a share and a coefficient's name stay as stored; a sentence no template matches
(written by another version of ml) is shown as stored. Change a text there, change it here.
"""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext_noop

from webapp.lib import known_text
from webapp.lib.known_text import Known, KnownTexts

# ml.agreement: the peak decisions' coefficients
PEAKS = (
    gettext_noop("No item was judged by two or more reviewers: agreement is undefined."),
    known_text.ngettext(
        "Only %(items)s items were judged by two or more reviewers (fewer than %(least)s): the intervals are wide "
        "and one item can move a coefficient.",
        "Only %(items)s items were judged by two or more reviewers (fewer than %(least)s): the intervals are wide "
        "and one item can move a coefficient.",
        "items",
    ),
    Known(
        gettext_noop(
            "Every judgement is %(label)s: there is no variation to agree on, so %(undefined)s is undefined and "
            "only observed agreement means anything."
        ),
        words=("label", "undefined"),
    ),
    Known(
        gettext_noop(
            "Every judgement is %(label)s: there is no variation to agree on, so %(undefined)s are undefined and "
            "only observed agreement means anything."
        ),
        words=("label", "undefined"),
    ),
    Known(
        gettext_noop(
            "%(label)s is %(share)s of the judgements (above %(skew)s): kappa and alpha fall toward 0 on such "
            "skewed labels even when reviewers agree (the kappa paradox); read AC1 and observed agreement beside "
            "them."
        ),
        words=("label",),
    ),
    known_text.ngettext(
        "Reviewer %(reviewer)s made %(judgements)s judgements (fewer than %(least)s): the kappas of their pairs "
        "rest on few items.",
        "Reviewer %(reviewer)s made %(judgements)s judgements (fewer than %(least)s): the kappas of their pairs "
        "rest on few items.",
        "judgements",
    ),
)
# words ml.agreement puts inside a sentence: which coefficients are undefined, a decision's label
# as repr quotes it ('kept')
WORDS = (
    Known("'%(label)s'", words=("label",)),  # no words of its own
    gettext_noop("no coefficient"),
    gettext_noop("%(first)s and %(last)s"),
    known_text.pgettext("peak decision", "kept"),
    known_text.pgettext("peak decision", "rejected"),
)
# ml.span_agreement: the spans' F1 and alpha
SPANS = (
    gettext_noop("No document was annotated by two or more annotators: agreement is undefined."),
    known_text.ngettext(
        "Only %(documents)s documents were annotated by two or more annotators (fewer than %(least)s): the "
        "intervals are wide and one document can move a figure.",
        "Only %(documents)s documents were annotated by two or more annotators (fewer than %(least)s): the "
        "intervals are wide and one document can move a figure.",
        "documents",
    ),
    known_text.ngettext(
        "Label %(label)s has %(spans)s span (fewer than %(least)s): too rare to measure; its F1 and alpha are "
        "hints, not figures to quote.",
        "Label %(label)s has %(spans)s spans (fewer than %(least)s): too rare to measure; its F1 and alpha are "
        "hints, not figures to quote.",
        "spans",
    ),
    gettext_noop(
        "Label %(label)s covers every token of the documents two or more annotators annotated for it, in every "
        "annotator's spans: no token says it apart, its alpha is undefined."
    ),
    gettext_noop(
        "Label %(label)s covers no token of the documents two or more annotators annotated for it: its alpha is "
        "undefined."
    ),
    gettext_noop(
        "Annotator %(annotator)s marked no span: every span of the others counts as missed by them; check that "
        "their file was complete before reading their pairs."
    ),
    gettext_noop("Annotator %(annotator)s shares no document with another annotator: not compared."),
    known_text.ngettext(
        "%(untexted)s of %(documents)s documents came without their text: alpha counts their characters up to "
        "the last span's end instead of tokens.",
        "%(untexted)s of %(documents)s documents came without their text: alpha counts their characters up to "
        "the last span's end instead of tokens.",
        "untexted",
    ),
)


class _Sentences(KnownTexts):
    """The diagnostics' sentences; a value inside one is looked up among WORDS only (so "and" is
    never read into a sentence no template matches)."""

    def render(self, text, translation, _depth: int = 0):
        if _depth:
            return words().render(text, translation, _depth)
        return super().render(text, translation, _depth)


@cache
def texts() -> KnownTexts:
    return _Sentences([*PEAKS, *SPANS])


@cache
def words() -> KnownTexts:
    return KnownTexts(WORDS)


def listed() -> set[str]:
    """Every English template of the table (both forms of a plural)."""
    return {t for known in (*texts().known, *words().known) for t in (known.template, known.plural) if t}


def shown(text):
    """A stored diagnostic in the active language; as stored when not recognised."""
    return texts().render(text, translation)
