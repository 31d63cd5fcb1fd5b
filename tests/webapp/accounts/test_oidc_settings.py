"""Sign-in through an identity provider is configured from the environment, off by default, and
a half or wrong configuration stops the start with a message that names what to fix."""

import json

import pytest
from django.urls import reverse

from tests.webapp.test_settings import run_with_env

PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s;"
    "print(json.dumps({'backends': s.AUTHENTICATION_BACKENDS, 'roles': s.OIDC_GROUP_ROLES,"
    " 'form_action': s.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action'],"
    " 'renew': s.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS}))"
)
KEYCLOAK = "https://idp.hospital.example/realms/ward/protocol/openid-connect"
CONFIGURED = {
    "OIDC_RP_CLIENT_ID": "decselfmask",
    "OIDC_RP_CLIENT_SECRET": "s3cret",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{KEYCLOAK}/auth",
    "OIDC_OP_TOKEN_ENDPOINT": f"{KEYCLOAK}/token",
    "OIDC_OP_USER_ENDPOINT": f"{KEYCLOAK}/userinfo",
    "OIDC_OP_JWKS_ENDPOINT": f"{KEYCLOAK}/certs",
    "OIDC_OP_LOGOUT_ENDPOINT": f"{KEYCLOAK}/logout",
    "OIDC_GROUP_ROLES": '{"ward-doctors": "icu:clinician", "dsm-admins": "icu:admin"}',
}


def probe(extra, tmp_path):
    result = run_with_env({"DATA_DIR": str(tmp_path), **extra}, PROBE)
    return result if result.returncode else json.loads(result.stdout)


def test_with_no_client_id_only_local_accounts_sign_in(tmp_path):
    conf = probe({}, tmp_path)
    assert not any("oidc" in backend for backend in conf["backends"])
    assert conf["form_action"] == ["'self'"]


def test_a_configured_provider_adds_its_backend_its_role_mapping_and_its_logout_origin(tmp_path):
    conf = probe({**CONFIGURED, "OIDC_RENEW_SECONDS": "120"}, tmp_path)
    assert conf["backends"][-1] == "webapp.accounts.oidc.OIDCBackend"
    assert "webapp.accounts.backends.AccountBackend" in conf["backends"]  # local accounts stay
    assert conf["roles"] == {"ward-doctors": [["icu", "clinician"]], "dsm-admins": [["icu", "admin"]]}
    assert conf["form_action"] == ["'self'", "https://idp.hospital.example"]
    assert conf["renew"] == 120


def test_a_client_id_without_the_endpoints_stops_the_start_naming_them(tmp_path):
    result = probe({"OIDC_RP_CLIENT_ID": "decselfmask"}, tmp_path)
    assert result.returncode != 0
    assert "OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT" in result.stderr


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"ward-doctors": "icu:doctor"}', "maps 'ward-doctors' to 'icu:doctor'"),
        ('{"ward-doctors": "clinician"}', "a value is 'project-slug:role'"),
        ('["ward-doctors"]', "must be a JSON object"),
        ("ward-doctors=clinician", "is not JSON"),
    ],
)
def test_a_wrong_group_role_mapping_stops_the_start(tmp_path, raw, message):
    result = probe({**CONFIGURED, "OIDC_GROUP_ROLES": raw}, tmp_path)
    assert result.returncode != 0
    assert message in result.stderr


def test_with_oidc_off_the_login_page_has_no_provider_button_and_its_urls_answer_404(client, db):
    assert "Sign in with" not in client.get(reverse("login")).text
    assert client.get(reverse("oidc_authentication_init")).status_code == 404
    assert client.get(reverse("oidc_authentication_callback"), {"code": "x", "state": "y"}).status_code == 404
