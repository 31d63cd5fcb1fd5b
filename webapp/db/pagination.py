"""Limit/offset pages with a cap: `?limit=` (default 50, at most 200) and `?offset=`; the answer
says the total and the next offset (null on the last page). Rows are ordered by id, so a page
is stable while rows are added at the end."""

from ninja import Schema

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class PageQuery(Schema):
    limit: int = DEFAULT_LIMIT
    offset: int = 0


def page(queryset, query: PageQuery, serialise) -> dict:
    limit = max(1, min(query.limit, MAX_LIMIT))
    offset = max(0, query.offset)
    total = queryset.count()
    rows = list(queryset.order_by("pk")[offset : offset + limit])
    following = offset + len(rows)
    return {
        "count": total,
        "limit": limit,
        "offset": offset,
        "next_offset": following if following < total else None,
        "items": [serialise(row) for row in rows],
    }
