"""Finding notes by the words in them, in both note browsers (corpus and review).

On PostgreSQL a note's words are indexed (migration 0004_note_search: a tsvector kept by a trigger,
a GIN index) in the text-search configuration of its corpus's language, so "dolori" finds
"dolore" in an Italian corpus and "fractures" finds "fractured" in an English one. The query is
read by websearch_to_tsquery, which accepts any text: quotes make a phrase, "or" an
alternative, a leading "-" excludes a word; stray punctuation is ignored, never an error.

Elsewhere (SQLite, the embedded default) every word of the query must occur in the text, as a
case-insensitive substring: no stemming, but the same "all words" meaning for plain queries.

A query also matches a note whose id starts with it, so pasting an id still finds the note.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField, F, Q, QuerySet
from django.db.models.expressions import RawSQL

MAX_QUERY_CHARS = 200
# A query matching fewer notes than this is "rare": its matches are read through the indexes and
# sorted; a commoner one walks the corpus in id order, where a page of matches comes soon.
RARE_MATCHES = 2_000

# The language is a constant of the query (corpus_search_config is IMMUTABLE): PostgreSQL folds it
# and the GIN index answers; a per-row lookup of the corpus's language would walk the whole table.
_MATCHES = "corpus_note.search @@ websearch_to_tsquery(corpus_search_config(%s), %s)"


def clean_query(raw: str) -> str:
    """The query as searched: trimmed, at most MAX_QUERY_CHARS characters, no NUL (PostgreSQL
    refuses it in text)."""
    return raw.replace("\x00", " ").strip()[:MAX_QUERY_CHARS]


def matching(notes: QuerySet, query: str, *, language: str, vendor: str | None = None) -> QuerySet:
    """`notes` (a Note queryset of one corpus, whose language this is) narrowed to those that
    contain the query's words or whose external id starts with it. An empty query narrows nothing.
    On PostgreSQL both halves have an index (GIN on the words, a pattern index on the ids), so a
    rare word is found without reading the corpus."""
    query = clean_query(query)
    if not query:
        return notes
    by_id = Q(external_id__startswith=query)
    if (vendor or connection.vendor) == "postgresql":
        words = RawSQL(_MATCHES, (language, query), output_field=BooleanField())
        return notes.alias(search_hit=words).filter(by_id | Q(search_hit=True))
    words = Q()
    for word in query.split():
        words &= Q(text__icontains=word.strip('"'))
    return notes.filter(by_id | words)


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
