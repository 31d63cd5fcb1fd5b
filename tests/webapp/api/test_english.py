"""The REST API answers in English whatever language the caller's browser or profile names: its
messages are read by programs (webapp.accounts.language.ENGLISH_ONLY_PATHS)."""

import pytest
from django.utils import translation

from webapp.accounts.models import Preference


@pytest.mark.parametrize("code", ["it", "es"])
def test_an_api_answer_is_english_whatever_the_caller_speaks(client, researcher, own, make_token, bearer, code):
    Preference.objects.create(user=researcher, language=code)
    client.force_login(researcher)  # a session whose user chose Italian or Spanish, as well as the token
    _, secret = make_token(researcher, [own["project"]])
    answer = client.get(
        f"/api/corpora/{own['corpus'].pk}/notes?limit=1&offset=1",
        headers={**bearer(secret), "Accept-Language": code},
    )
    assert answer.status_code == 400
    assert answer["Content-Language"] == "en"
    assert answer.json()["detail"].startswith("offset: ")
    page = client.get("/projects/", headers={"Accept-Language": code})  # the pages do speak it
    assert page["Content-Language"] == code
    translation.activate("en")


@pytest.mark.parametrize("code", ["it", "es"])
def test_the_token_and_webhook_pages_speak_the_readers_language_and_the_api_beside_them_does_not(
    client, researcher, own, make_token, bearer, code
):
    """Only the two pages under /api/ (webapp.accounts.language.PAGES_UNDER_API) follow the
    reader; a JSON answer next to them, or a path that merely begins like them, stays English."""
    client.force_login(researcher)
    slug = own["project"].slug
    for page in ("/api/tokens/", f"/api/projects/{slug}/webhooks/"):
        answer = client.get(page, headers={"Accept-Language": code})
        assert answer.status_code in (200, 403) and answer["Content-Language"] == code, page  # a refusal too
    _, secret = make_token(researcher, [own["project"]])
    for path in ("/api/projects", "/api/tokens/1", f"/api/projects/{slug}/webhooks/1", "/api/tokens/x/tokens/"):
        answer = client.get(path, headers={**bearer(secret), "Accept-Language": code})
        assert answer["Content-Language"] == "en", path
    translation.activate("en")
