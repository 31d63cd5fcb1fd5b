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
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL

MAX_QUERY_CHARS = 200

_MATCHES = RawSQL(
    "corpus_note.search @@ websearch_to_tsquery("
    "corpus_search_config((SELECT language FROM corpus_corpus WHERE id = corpus_note.corpus_id)), %s)",
    (),
    output_field=BooleanField(),
)


def clean_query(raw: str) -> str:
    """The query as searched: trimmed, at most MAX_QUERY_CHARS characters, no NUL (PostgreSQL
    refuses it in text)."""
    return raw.replace("\x00", " ").strip()[:MAX_QUERY_CHARS]


def matching(notes: QuerySet, query: str, *, vendor: str | None = None) -> QuerySet:
    """`notes` (a Note queryset) narrowed to those that contain the query's words or whose
    external id starts with it. An empty query narrows nothing."""
    query = clean_query(query)
    if not query:
        return notes
    by_id = Q(external_id__startswith=query)
    if (vendor or connection.vendor) == "postgresql":
        words = RawSQL(_MATCHES.sql, (query,), output_field=BooleanField())
        return notes.alias(search_hit=words).filter(by_id | Q(search_hit=True))
    words = Q()
    for word in query.split():
        words &= Q(text__icontains=word.strip('"'))
    return notes.filter(by_id | words)
