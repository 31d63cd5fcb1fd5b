"""The API's pages of a query, by cursor: `?limit=` (default 50, at most 200; more reads as 200)
and `?cursor=`, the answer `{"items": [...], "limit": n, "next": "/api/...?cursor=...&limit=n"}`
with `next` null on the last page. No count of the whole table and no OFFSET: a page is
`WHERE key > last key ORDER BY key LIMIT n + 1` (keyset), so its cost does not grow with its
depth, given an index that starts with the query's equality filters and ends with the key
(`corpus_note_corpus_id_idx` on (corpus_id, id) for a corpus's notes).

The ordering key is the primary key, or one non-null number, date or time column with the
primary key breaking ties (`order="-created"`: newest first). A cursor holds that last key only
(an id, a timestamp: never text) and the key's name, signed with SECRET_KEY for this list's path
(django.core.signing), so a cursor is opaque, cannot be forged or moved to another list, and
anything else sent as one is a 400 saying so. It moves nobody past the access layer: what is
paged is the queryset the caller filtered for the user (`visible_to`), a cursor only says where
in it to start.

`?offset=` (the paging this replaced) is refused with a 400 naming `cursor`: a client reading
`next_offset` would otherwise stop after one page without noticing (docs/api.md).

In a router: `response=page_of(CorpusOut)` and `return page(request, queryset, query)`; or
`page(request, queryset, query, serialise)` with a function that makes each row's dict."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from functools import cache
from typing import Any
from urllib.parse import urlencode

from django.core import signing
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan
from ninja import Schema
from ninja.errors import HttpError
from pydantic import Field, create_model

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_CURSOR_CHARS = 400  # a signed key of two values is about 90
SALT = "webapp.db.pagination"
KEY_TYPES = (int, float, decimal.Decimal, datetime.date, datetime.datetime)
SAY_CURSOR = "Leave cursor out for the first page; each page's `next` link carries the cursor of the one after."


class PageQuery(Schema):
    limit: int = Field(DEFAULT_LIMIT, description=f"Rows a page, 1 to {MAX_LIMIT} (more reads as {MAX_LIMIT}).")
    cursor: str | None = Field(None, description="Where the page starts: the cursor of the previous page's `next`.")


class Page(Schema):
    """A page of a list; `page_of(ItemSchema)` gives the typed one."""

    items: list[Any]
    limit: int = Field(description="Rows a page asked for (the last page may hold fewer).")
    next: str | None = Field(description="The next page's path with its cursor; null on the last page.")


@cache
def page_of(item: type) -> type[Page]:
    """The page schema of a list of `item` (named `<Item>Page` in the OpenAPI document)."""
    name = item.__name__
    return create_model(f"{name}Page", __base__=Page, __doc__=f"A page of {name}.", items=(list[item], ...))


class Ordering:
    """A list's ordering key: the primary key, or `field` (a non-null number or time) then pk."""

    def __init__(self, model, order: str):
        self.descending = order.startswith("-")
        name = order.lstrip("-")
        field = model._meta.pk if name == "pk" else model._meta.get_field(name)
        if field.null or not isinstance(
            field,
            (models.IntegerField, models.AutoField, models.FloatField, models.DecimalField, models.DateField),
        ):
            raise ValueError(f"{model.__name__}.{name}: a page's key is a non-null number, date or time, never text")
        self.fields = [field] if field.primary_key else [field, model._meta.pk]
        self.names = [f.attname for f in self.fields]
        self.order = order

    def order_by(self) -> list:
        return [f"-{n}" if self.descending else n for n in self.names]

    def key(self, row) -> list:
        return [getattr(row, name) for name in self.names]

    def after(self, queryset, key: list):
        if len(key) == 1:
            return queryset.filter(**{f"{self.names[0]}__{'lt' if self.descending else 'gt'}": key[0]})
        # A row comparison, (created, id) > (%s, %s), which PostgreSQL reads as one index range;
        # an OR of the two cases would walk the index from its start.
        lookup = TupleLessThan if self.descending else TupleGreaterThan
        return queryset.filter(lookup(Tuple(*(F(n) for n in self.names)), key))

    def encode(self, key: list, path: str) -> str:
        plain = [v.isoformat() if isinstance(v, datetime.date) else v for v in key]
        plain = [str(v) if isinstance(v, decimal.Decimal) else v for v in plain]
        return signing.dumps({"o": self.order, "k": plain}, salt=f"{SALT}:{path}")

    def decode(self, cursor: str, path: str) -> list:
        if len(cursor) > MAX_CURSOR_CHARS:
            raise _bad(f"This cursor is longer than any this API gives ({MAX_CURSOR_CHARS} characters at most).")
        try:
            data = signing.loads(cursor, salt=f"{SALT}:{path}")
        except signing.BadSignature:
            raise _bad("This cursor is not one this list gave (its signature does not match).") from None
        if not isinstance(data, dict) or data.get("o") != self.order:
            raise _bad("This cursor was made for another ordering of this list.")
        key = data.get("k")
        try:
            if not isinstance(key, list) or len(key) != len(self.fields):
                raise ValueError
            if any(isinstance(v, bool) or not isinstance(v, (int, float, str)) for v in key):
                raise ValueError
            values = [field.to_python(value) for field, value in zip(self.fields, key)]
            if any(not isinstance(v, KEY_TYPES) for v in values):
                raise ValueError
        except (ValidationError, TypeError, ValueError):
            raise _bad("This cursor does not hold this list's key.") from None
        return values


def _bad(detail: str) -> HttpError:
    return HttpError(400, f"cursor: {detail} {SAY_CURSOR}")


def page(
    request,
    queryset,
    query: PageQuery,
    serialise: Callable[[Any], Any] | None = None,
    *,
    order: str = "pk",
) -> dict:
    """One page of `queryset` (already filtered for the request's user) in `order`, with the
    path of the next one; rows as they are (for a typed schema) or through `serialise`."""
    if "offset" in request.GET:
        raise HttpError(
            400, f"offset: paging by offset has ended; lists page by cursor. {SAY_CURSOR} (docs/api.md: Lists)"
        )
    limit = max(1, min(query.limit, MAX_LIMIT))
    ordering = Ordering(queryset.model, order)
    path = request.path_info
    rows = queryset.order_by(*ordering.order_by())
    if query.cursor:
        rows = ordering.after(rows, ordering.decode(query.cursor, path))
    rows = list(rows[: limit + 1])
    following = None
    if len(rows) > limit:
        rows = rows[:limit]
        params = {k: v for k, v in request.GET.items() if k not in ("cursor", "limit")}
        params.update(limit=limit, cursor=ordering.encode(ordering.key(rows[-1]), path))
        following = f"{request.path}?{urlencode(params)}"
    return {
        "items": rows if serialise is None else [serialise(row) for row in rows],
        "limit": limit,
        "next": following,
    }
