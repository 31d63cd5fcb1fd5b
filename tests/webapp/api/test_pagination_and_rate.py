"""Pages by cursor (webapp.db.pagination) through the API: every note once by following `next`,
the cap, the refusals of an offset and of a cursor the list did not give, and no page of another
project's rows whatever the cursor; the per-token rate limit (per clock minute) answers 429 with
Retry-After and is audited (how it counts across processes: test_rate_limit.py)."""

from django.core import signing

from webapp.api import tokens
from webapp.api.models import ApiToken
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note
from webapp.db import pagination


def test_pages_walk_every_note_once(client, researcher, own, make_token, bearer):
    corpus = own["corpus"]
    for i in range(5):
        Note.objects.create(corpus=corpus, external_id=f"b{i}", text="x")
    _, secret = make_token(researcher, [own["project"]])
    seen, url = [], f"/api/corpora/{corpus.pk}/notes?limit=3"
    while url is not None:
        page = client.get(url, headers=bearer(secret)).json()
        assert set(page) == {"items", "limit", "next"} and len(page["items"]) <= 3  # no count
        seen += [item["id"] for item in page["items"]]
        url = page["next"]
    assert seen == sorted(Note.objects.filter(corpus=corpus).values_list("pk", flat=True))


def test_a_page_is_capped(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    page = client.get(f"/api/corpora/{own['corpus'].pk}/notes?limit=100000", headers=bearer(secret)).json()
    assert page["limit"] == pagination.MAX_LIMIT


def test_an_offset_is_a_400_that_names_cursor(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    answer = client.get(f"/api/corpora/{own['corpus'].pk}/notes?limit=1&offset=1", headers=bearer(secret))
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("offset: ") and "cursor" in answer.json()["detail"]


def test_a_cursor_the_api_did_not_give_is_a_400(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    url = f"/api/corpora/{own['corpus'].pk}/notes"
    forged = signing.dumps({"o": "pk", "k": [0]}, salt="not the API's")
    for cursor in ("garbage", forged):
        answer = client.get(url, {"cursor": cursor}, headers=bearer(secret))
        assert answer.status_code == 400
        assert answer.json()["detail"].startswith("cursor: ")


def test_a_cursor_pages_the_users_own_rows_only(client, researcher, own, other, make_token, bearer):
    """Another project's corpus lies between two of A's in id order: a cursor past A's first
    corpus leads to A's second, never to B's, and B's list answers 404 whatever the cursor."""
    later = Corpus.objects.create(project=own["project"], name="ward A2", language="en", deidentified=True)
    assert own["corpus"].pk < other["corpus_id"] < later.pk
    _, secret = make_token(researcher, [own["project"]])
    first = client.get("/api/corpora?limit=1", headers=bearer(secret)).json()
    assert [c["id"] for c in first["items"]] == [own["corpus"].pk]
    second = client.get(first["next"], headers=bearer(secret)).json()
    assert [c["id"] for c in second["items"]] == [later.pk] and second["next"] is None
    notes = client.get(f"/api/corpora/{own['corpus'].pk}/notes?limit=1", headers=bearer(secret)).json()
    moved = notes["next"].replace(f"/corpora/{own['corpus'].pk}/", f"/corpora/{other['corpus_id']}/")
    assert client.get(moved, headers=bearer(secret)).status_code == 404


def test_the_rate_limit_refuses_the_request_past_it(client, researcher, own, make_token, bearer, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    token, secret = make_token(researcher, [own["project"]])
    ApiToken.objects.filter(pk=token.pk).update(window_start=0)  # a fresh window whatever the clock
    answers = [client.get("/api/corpora", headers=bearer(secret)) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    assert AuditEvent.objects.get(action=tokens.REFUSED).details["reason"] == "rate limit"


def test_a_new_minute_opens_a_new_window(researcher, own, make_token, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    token, _ = make_token(researcher, [own["project"]])
    start = 60 * 1_000_000.0
    assert tokens.count_request(token, now=start) == 0
    assert tokens.count_request(token, now=start + 30) == 30  # the 31st second: 30 left in the minute
    assert tokens.count_request(token, now=start + 60) == 0
