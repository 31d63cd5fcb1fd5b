"""The re-check of a sign-in at the provider (SessionRefresh): when it is due, a page goes to the
provider without a prompt, an htmx request reloads its page instead, and a local account's
session is never sent there; the callback names a provider's error and nothing else. (The whole
round trip, with a real provider: tests/browser/test_oidc_sign_in.py.)"""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from webapp.audit.models import AuditEvent

IDP = "https://idp.hospital.example/realms/ward/protocol/openid-connect"
OIDC_BACKEND = "webapp.accounts.oidc.OIDCBackend"


@pytest.fixture
def oidc_on(settings):
    settings.OIDC_RP_CLIENT_ID = "decselfmask"
    settings.OIDC_RP_CLIENT_SECRET = "s3cret"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{IDP}/auth"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{IDP}/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{IDP}/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{IDP}/certs"
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, OIDC_BACKEND]


def test_a_due_check_sends_the_page_to_the_provider_without_a_prompt_and_with_pkce(client, clinician, oidc_on):
    client.force_login(clinician, backend=OIDC_BACKEND)  # no expiry in the session: the check is due
    response = client.get(reverse("corpus:list"))
    assert response.status_code == 302
    url = urlsplit(response["Location"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{IDP}/auth"
    query = parse_qs(url.query)
    assert query["prompt"] == ["none"]
    assert query["code_challenge_method"] == ["S256"]
    assert query["redirect_uri"] == ["http://testserver/oidc/callback/"]


def test_a_due_check_on_an_htmx_request_reloads_the_page_instead_of_redirecting_it(client, clinician, oidc_on):
    client.force_login(clinician, backend=OIDC_BACKEND)
    response = client.get(reverse("corpus:list"), headers={"HX-Request": "true"})
    assert (response.status_code, response["HX-Refresh"]) == (204, "true")


def test_a_check_not_yet_due_lets_the_page_through(client, clinician, oidc_on):
    client.force_login(clinician, backend=OIDC_BACKEND)
    session = client.session
    session["oidc_id_token_expiration"] = 2**40
    session.save()
    assert client.get(reverse("corpus:list")).status_code == 200


def test_a_local_accounts_session_is_never_sent_to_the_provider(client, clinician, oidc_on):
    client.force_login(clinician, backend="webapp.accounts.backends.AccountBackend")
    assert client.get(reverse("corpus:list")).status_code == 200


def test_logout_of_a_local_account_goes_to_the_login_page_not_the_provider(client, clinician, oidc_on, settings):
    settings.OIDC_OP_LOGOUT_ENDPOINT = f"{IDP}/logout"
    client.force_login(clinician, backend="webapp.accounts.backends.AccountBackend")
    assert client.post(reverse("logout"))["Location"] == reverse("login")


def test_a_provider_error_in_the_callback_is_shown_by_name_and_any_other_text_is_not(client, oidc_on, db):
    response = client.get(reverse("oidc_authentication_callback"), {"error": "login_required"})
    assert response.status_code == 403
    assert "(login_required)" in response.text
    response = client.get(reverse("oidc_authentication_callback"), {"error": "Call 555-0100 to unlock"})
    assert "555-0100" not in response.text
    assert "(other)" in response.text
    errors = AuditEvent.objects.filter(action="login_failed").values_list("details__error", flat=True)
    assert sorted(errors) == ["login_required", "other"]
