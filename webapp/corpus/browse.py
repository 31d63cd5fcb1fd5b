"""Paging through corpora of millions of notes: keyset pagination on (corpus, id), never OFFSET,
and never loading note text for a list. A query finds notes by their words (webapp.corpus.search)."""

from dataclasses import dataclass

from django.db.models.functions import Length

from webapp.corpus import search
from webapp.corpus.models import Corpus, Note

NOTES_PER_PAGE = 50


@dataclass
class NotePage:
    notes: list
    next_after: int | None
    query: str


def note_page(corpus: Corpus, *, after=None, query: str = "", per_page: int = NOTES_PER_PAGE) -> NotePage:
    notes = Note.objects.filter(corpus=corpus).order_by("id")
    try:
        after_id = int(after) if after else None
    except ValueError:
        after_id = None
    if after_id is not None:
        notes = notes.filter(id__gt=after_id)
    query = search.clean_query(query)
    if query:
        notes = search.in_id_order(search.matching(notes, query, language=corpus.language))
    rows = list(notes.annotate(length=Length("text")).values("id", "external_id", "length", "created")[: per_page + 1])
    next_after = rows[per_page - 1]["id"] if len(rows) > per_page else None
    return NotePage(rows[:per_page], next_after, query)
