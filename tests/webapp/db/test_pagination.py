"""Keyset pages of a query (webapp.db.pagination), on both databases (the `embedded` marker: make
test runs this module on SQLite too): every row once in key order while rows come and go, ties
on a time broken by pk, one query a page and no count, a cursor that holds a key and no text,
and every cursor the API did not give refused with a 400 that says what to send."""

import datetime

import pytest
from django.core import signing
from django.test import RequestFactory
from django.utils import timezone
from ninja import Schema
from ninja.errors import HttpError

from tests.projects import default_project
from webapp.corpus.models import Corpus, Note
from webapp.db import pagination
from webapp.db.pagination import Ordering, PageQuery, page, page_of

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

PATH = "/api/corpora/1/notes"


@pytest.fixture
def notes():
    corpus = Corpus.objects.create(project=default_project(), name="paged", language="en")
    return corpus, [Note.objects.create(corpus=corpus, external_id=f"n{i}", text=f"note {i}") for i in range(7)]


def get(url: str = PATH, **params):
    return RequestFactory().get(url, params)


def query_of(request) -> PageQuery:
    return PageQuery(**{k: v for k, v in request.GET.items() if k in ("limit", "cursor")})


def walk(queryset, limit: int, **kwargs) -> list[list]:
    """Every page of `queryset`, following `next` as a client does; the pages' rows."""
    request, pages = get(limit=limit), []
    while True:
        answer = page(request, queryset, query_of(request), **kwargs)
        pages.append(answer["items"])
        assert answer["limit"] == limit and set(answer) == {"items", "limit", "next"}  # no count
        if answer["next"] is None:
            return pages
        assert answer["next"].startswith(PATH + "?")
        request = get(answer["next"])


def test_pages_give_every_row_once_in_pk_order(notes):
    corpus, made = notes
    pages = walk(Note.objects.filter(corpus=corpus), 3)
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [n.pk for p in pages for n in p] == [n.pk for n in made]


def test_a_page_as_full_as_the_rest_is_the_last_when_nothing_follows(notes):
    corpus, _ = notes
    assert [len(p) for p in walk(Note.objects.filter(corpus=corpus), 7)] == [7]


def test_a_row_deleted_or_added_between_pages_moves_no_row_to_another_page(notes):
    corpus, made = notes
    request = get(limit=3)
    first = page(request, Note.objects.filter(corpus=corpus), query_of(request))
    made[2].delete()  # the first page's last row: an offset would now skip made[3]
    made[0].delete()
    added = Note.objects.create(corpus=corpus, external_id="late", text="late")
    second = page(get(first["next"]), Note.objects.filter(corpus=corpus), query_of(get(first["next"])))
    assert [n.pk for n in second["items"]] == [made[3].pk, made[4].pk, made[5].pk]
    third_request = get(second["next"])
    third = page(third_request, Note.objects.filter(corpus=corpus), query_of(third_request))
    assert [n.pk for n in third["items"]] == [made[6].pk, added.pk] and third["next"] is None


def test_a_time_key_breaks_ties_by_pk_newest_first(notes):
    corpus, made = notes
    noon = timezone.make_aware(datetime.datetime(2026, 3, 1, 12))
    for i, note in enumerate(made):  # three notes share one instant, two another
        Note.objects.filter(pk=note.pk).update(created=noon + datetime.timedelta(seconds=[0, 5, 5, 5, 9, 9, 1][i]))
    rows = Note.objects.filter(corpus=corpus)
    pages = walk(rows, 2, order="-created")
    expected = sorted(rows, key=lambda n: (n.created, n.pk), reverse=True)
    assert [n.pk for p in pages for n in p] == [n.pk for n in expected]
    assert [len(p) for p in pages] == [2, 2, 2, 1]


def test_a_page_is_one_query_and_counts_nothing(notes, django_assert_num_queries):
    corpus, _ = notes
    request = get(limit=2)
    first = page(request, Note.objects.filter(corpus=corpus), query_of(request))
    following = get(first["next"])
    with django_assert_num_queries(1) as captured:
        page(following, Note.objects.filter(corpus=corpus), query_of(following))
    sql = captured.captured_queries[0]["sql"].upper()
    assert "COUNT(" not in sql and "OFFSET" not in sql and "LIMIT 3" in sql


def test_the_cursor_holds_the_key_and_its_name_only(notes):
    corpus, made = notes
    answer = page(get(limit=1), Note.objects.filter(corpus=corpus), PageQuery(limit=1))
    cursor = get(answer["next"]).GET["cursor"]
    assert signing.loads(cursor, salt=f"{pagination.SALT}:{PATH}") == {"o": "pk", "k": [made[0].pk]}
    assert "n0" not in signing.b64_decode(cursor.split(":")[0].encode()).decode()


def test_the_next_link_keeps_the_other_parameters_and_the_capped_limit(notes):
    corpus, _ = notes
    request = get(limit=100_000, fmt="jsonl")
    for _ in range(pagination.MAX_LIMIT):
        Note.objects.create(corpus=corpus, external_id=f"x{_}", text="x")
    answer = page(request, Note.objects.filter(corpus=corpus), query_of(request))
    assert answer["limit"] == pagination.MAX_LIMIT and len(answer["items"]) == pagination.MAX_LIMIT
    following = get(answer["next"]).GET
    assert (following["fmt"], following["limit"]) == ("jsonl", str(pagination.MAX_LIMIT))


def refusal(request, queryset, **kwargs) -> str:
    with pytest.raises(HttpError) as refused:
        page(request, queryset, query_of(request), **kwargs)
    assert refused.value.status_code == 400
    return str(refused.value)


@pytest.mark.parametrize(
    "cursor, says",
    [
        ("not-a-cursor", "not one this list gave"),
        (signing.dumps({"o": "pk", "k": [3]}, salt="another salt"), "not one this list gave"),
        (signing.dumps({"o": "pk", "k": [3]}, salt=f"{pagination.SALT}:/api/corpora"), "not one this list gave"),
        (signing.dumps({"o": "-created", "k": [3]}, salt=f"{pagination.SALT}:{PATH}"), "another ordering"),
        (signing.dumps({"o": "pk", "k": ["three"]}, salt=f"{pagination.SALT}:{PATH}"), "this list's key"),
        (signing.dumps({"o": "pk", "k": [3, 4]}, salt=f"{pagination.SALT}:{PATH}"), "this list's key"),
        (signing.dumps({"o": "pk", "k": [True]}, salt=f"{pagination.SALT}:{PATH}"), "this list's key"),
        (signing.dumps(["pk", 3], salt=f"{pagination.SALT}:{PATH}"), "another ordering"),
        ("x" * 1000, "longer than any"),
    ],
    # named, not by the signed cursors: those hold a timestamp, and pytest-xdist's processes must
    # collect the same test ids
    ids=[
        "garbage",
        "another-salt",
        "another-list",
        "another-ordering",
        "wrong-key-type",
        "two-keys",
        "boolean-key",
        "a-list-not-a-dict",
        "too-long",
    ],
)
def test_a_cursor_the_list_did_not_give_is_a_400_that_says_what_to_send(notes, cursor, says):
    corpus, _ = notes
    detail = refusal(get(cursor=cursor), Note.objects.filter(corpus=corpus))
    assert detail.startswith("cursor: ") and says in detail and "Leave cursor out for the first page" in detail


def test_a_forged_key_on_a_time_ordering_is_refused(notes):
    corpus, _ = notes
    cursor = signing.dumps({"o": "-created", "k": ["yesterday", 1]}, salt=f"{pagination.SALT}:{PATH}")
    assert "this list's key" in refusal(get(cursor=cursor), Note.objects.filter(corpus=corpus), order="-created")


def test_an_offset_is_refused_naming_cursor(notes):
    corpus, _ = notes
    detail = refusal(get(offset=0), Note.objects.filter(corpus=corpus))
    assert detail.startswith("offset: ") and "cursor" in detail


def test_text_is_no_key():
    with pytest.raises(ValueError, match="never text"):
        Ordering(Note, "external_id")


def test_the_typed_page_names_its_item_and_reads_rows(notes):
    corpus, made = notes

    class NoteOut(Schema):
        id: int
        external_id: str

    schema = page_of(NoteOut)
    assert schema.__name__ == "NoteOutPage" and page_of(NoteOut) is schema
    answer = schema.model_validate(page(get(limit=2), Note.objects.filter(corpus=corpus), PageQuery(limit=2)))
    assert [item.external_id for item in answer.items] == ["n0", "n1"] and answer.next.startswith(PATH)
