"""Finding notes by the words in them, in both note browsers (corpus and review).

The query reads the same on both databases: every word must occur, quotes make a phrase, "or"
an alternative (between groups of words: `a b or c` is a and b, or c), a leading "-" leaves a
word or phrase out; stray punctuation is ignored, never an error. What differs is how a word
meets the text (help_text() says it to users):

- PostgreSQL: a note's words are indexed (migration 0004_note_search: a tsvector kept by a
  trigger, a GIN index) in the text-search configuration of its corpus's language, and the query
  is read by websearch_to_tsquery: a word finds the words with the same Snowball stem ("dolori"
  finds "dolore" in Italian, "fractures" finds "fractured" in English), stop words are skipped.
  Case is ignored; accents only where the language's stemmer drops them (Spanish, Catalan and
  Dutch always; others at times, as Italian's "città" and "citta" share the stem "citt").
- SQLite (the embedded default): an FTS5 index (migration 0008_note_search_sqlite) that folds
  case and accents in every language. FTS5 has no stemmer but English's, so a word of a
  stemmed language becomes a prefix query on its Snowball stem (the same algorithm PostgreSQL
  uses): "fiebres" (stem "fiebr") finds "fiebre" and "fiebres", and also longer words that begin
  with the stem ("pain" finds "painful"). Words of three letters or fewer, and every word in a
  language without a stemmer, must occur as written. Stop words count.

A query also matches a note whose id starts with it, so pasting an id still finds the note.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import snowballstemmer
from django.db import connection
from django.db.models import BooleanField, F, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils.translation import gettext, gettext_noop

MAX_QUERY_CHARS = 200
# A query matching fewer notes than this is "rare": its matches are read through the indexes and
# sorted; a commoner one walks the corpus in id order, where a page of matches comes soon.
RARE_MATCHES = 2_000

# The language is a constant of the query (corpus_search_config is IMMUTABLE): PostgreSQL folds it
# and the GIN index answers; a per-row lookup of the corpus's language would walk the whole table.
_MATCHES = "corpus_note.search @@ websearch_to_tsquery(corpus_search_config(%s), %s)"
_FTS5_MATCHES = "SELECT rowid FROM corpus_note_fts WHERE corpus_note_fts MATCH %s"

# The Snowball stemmer of a corpus language: the languages corpus_search_config (migration 0004)
# stems on PostgreSQL; any other language is matched word for word, as 'simple' does there.
STEMMERS = {
    "it": "italian", "ita": "italian", "en": "english", "eng": "english", "es": "spanish", "spa": "spanish",
    "fr": "french", "de": "german", "pt": "portuguese", "nl": "dutch", "ca": "catalan",
}  # fmt: skip
# A stem shorter than this would find too many unrelated words as a prefix: such a word must occur.
MIN_PREFIX = 4

_TERM = re.compile(r'(-?)(?:"([^"]*)"?|([^\s"]+))')  # -? then a "phrase" (closed or not) or a word
_WORD = re.compile(r"[^\W_]+")  # the letters and digits FTS5's unicode61 tokenizer keeps together

HELP = {
    "postgresql": gettext_noop(
        "Every word must occur, in any form in the corpus's language (“fractures” finds “fractured”); "
        "quotes make a phrase, “or” an alternative, a leading “-” leaves a word out. Case is ignored; "
        "accents count unless the language's stemmer drops them (Spanish, Catalan and Dutch do)."
    ),
    "sqlite": gettext_noop(
        "Every word must occur, or a word beginning with its stem (“fractures” finds “fractured”, "
        "also “fracturing”; short words as written); quotes make a phrase, “or” an alternative, a "
        "leading “-” leaves a word out. Case and accents are ignored."
    ),
}


def help_text() -> str:
    """What the search box does on this database, in a sentence or two for its users."""
    return gettext(HELP.get(connection.vendor, HELP["sqlite"]))


def clean_query(raw: str) -> str:
    """The query as searched: trimmed, at most MAX_QUERY_CHARS characters, no NUL (PostgreSQL
    refuses it in text)."""
    return raw.replace("\x00", " ").strip()[:MAX_QUERY_CHARS]


def matching(notes: QuerySet, query: str, *, language: str) -> QuerySet:
    """`notes` (a Note queryset of one corpus, whose language this is) narrowed to those that
    contain the query's words or whose external id starts with it. An empty query narrows nothing.
    On PostgreSQL both halves have an index (GIN on the words, a pattern index on the ids), so a
    rare word is found without reading the corpus."""
    query = clean_query(query)
    if not query:
        return notes
    by_id = Q(external_id__startswith=query)
    if connection.vendor == "postgresql":
        words = RawSQL(_MATCHES, (language, query), output_field=BooleanField())
        return notes.alias(search_hit=words).filter(by_id | Q(search_hit=True))
    return notes.filter(by_id | _fts5_condition(parse(query), language))


def in_id_order(matches: QuerySet) -> QuerySet:
    """`matches` (from `matching`) in note id order, read the cheap way for their number.

    PostgreSQL's planner, asked for the first page in id order, walks the id index whenever it
    expects a page of matches soon; for a rare word it then reads the whole corpus to find a few
    notes (230 ms at 60k notes, growing with the corpus). So first count the matches up to
    RARE_MATCHES through the indexes (a few ms either way): when they are fewer, the page is read
    from the indexes and sorted (the id order through an expression, which the id index cannot
    serve); otherwise the id walk is the right plan."""
    rare = matches.order_by().values("id")[:RARE_MATCHES].count() < RARE_MATCHES
    return matches.order_by((F("id") + 0).asc() if rare else "id")


# --- the query on SQLite --------------------------------------------------------------------


@dataclass
class Group:
    """Terms that must all occur (`wanted`) and none of `unwanted`; a term is a list of words
    that must follow each other (one word, or a phrase)."""

    wanted: list[list[str]] = field(default_factory=list)
    unwanted: list[list[str]] = field(default_factory=list)


def parse(query: str) -> list[Group]:
    """The query as alternatives (split at "or"), as websearch_to_tsquery reads it. Terms
    without a letter or digit are dropped; so is an alternative left with no term."""
    groups = [Group()]
    for m in _TERM.finditer(query):
        negated, phrase, word = m[1] == "-", m[2], m[3]
        if phrase is None and not negated and word.lower() == "or":
            groups.append(Group())
            continue
        words = _WORD.findall(phrase if phrase is not None else word)
        if words:
            (groups[-1].unwanted if negated else groups[-1].wanted).append(words)
    return [g for g in groups if g.wanted or g.unwanted]


def _fts5_condition(groups: list[Group], language: str) -> Q:
    """The notes matching any alternative; none when the query has no word at all (as
    PostgreSQL's empty tsquery). FTS5 cannot say "not x" alone, so exclusion is SQL's."""
    stem = _stemmer(language)
    found = Q(pk__in=[])
    for group in groups:
        hit = Q()
        if group.wanted:
            hit &= Q(pk__in=_fts5(" AND ".join(_phrase(t, stem) for t in group.wanted)))
        if group.unwanted:
            hit &= ~Q(pk__in=_fts5(" OR ".join(_phrase(t, stem) for t in group.unwanted)))
        found |= hit
    return found


def _fts5(expression: str) -> RawSQL:
    return RawSQL(_FTS5_MATCHES, (expression,))


def _phrase(words: list[str], stem) -> str:
    """FTS5 phrase syntax: each word quoted (no FTS5 operator can hide in it), a prefix where
    the word has a stem worth searching by."""
    return " + ".join(_token(w, stem) for w in words)


def _token(word: str, stem) -> str:
    word = fold(word)
    if stem is None:
        return f'"{word}"'
    prefix = _common_prefix(word, fold(stem.stemWord(word)))  # "happy" stems to "happi": "happ"
    return f'"{prefix}"*' if len(prefix) >= MIN_PREFIX else f'"{word}"'


def fold(word: str) -> str:
    """Lower case without accents, as the index holds words (unicode61 remove_diacritics 2)."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _stemmer(language: str):
    """A new stemmer each query: one keeps the word it works on, so threads must not share it."""
    algorithm = STEMMERS.get(language.lower())
    return snowballstemmer.stemmer(algorithm) if algorithm else None
