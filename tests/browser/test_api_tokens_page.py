"""The API tokens page at 1280 px: a leaked token is revoked with the mouse (the "New token"
card once covered the Revoke button)."""

import pytest

from tests.projects import default_project
from webapp.api import tokens
from webapp.api.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_revoke_button_is_clicked_at_1280_px(login, researcher):
    token, _ = tokens.create(
        researcher, name="nightly export from the ward server", projects=[default_project()], ceiling="read", days=90
    )
    ApiToken.objects.filter(pk=token.pk).update(last_used=token.expires)  # the widest row: a date in every column
    page = login(researcher)
    page.goto("/api/tokens/")
    assert page.viewport_size["width"] == 1280
    revoke = page.locator(f"button[name=revoke][value='{token.pk}']")
    revoke.click(timeout=5_000)  # Playwright refuses a click another element would receive
    page.wait_for_load_state()
    token.refresh_from_db()
    assert token.revoked is not None
