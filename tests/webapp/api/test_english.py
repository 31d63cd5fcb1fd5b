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
