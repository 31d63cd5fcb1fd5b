"""Pages of at most MAX_LIMIT rows with the next offset; the per-token rate limit (per clock
minute, counted on the token's row) answers 429 with Retry-After and is audited."""

from webapp.api import tokens
from webapp.api.models import ApiToken
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.db import pagination


def test_pages_walk_every_note_once(client, researcher, own, make_token, bearer):
    corpus = own["corpus"]
    for i in range(5):
        Note.objects.create(corpus=corpus, external_id=f"b{i}", text="x")
    _, secret = make_token(researcher, [own["project"]])
    seen, offset = [], 0
    while offset is not None:
        page = client.get(f"/api/corpora/{corpus.pk}/notes?limit=3&offset={offset}", headers=bearer(secret)).json()
        assert page["count"] == 7 and len(page["items"]) <= 3
        seen += [item["id"] for item in page["items"]]
        offset = page["next_offset"]
    assert seen == sorted(Note.objects.filter(corpus=corpus).values_list("pk", flat=True))


def test_a_page_is_capped(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    page = client.get(f"/api/corpora/{own['corpus'].pk}/notes?limit=100000", headers=bearer(secret)).json()
    assert page["limit"] == pagination.MAX_LIMIT


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
