"""webapp.accounts.backends: each request's user read by SQL kept once per process, the same
instance the ORM gives, one query; a disabled account's session ends at its next request,
whether it signed in locally or through the identity provider."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from webapp.accounts.backends import AccountBackend, user_by_id
from webapp.accounts.oidc import OIDCBackend

from .test_oidc_session_refresh import OIDC_BACKEND, oidc_on  # noqa: F401 (a fixture)

LOCAL_BACKEND = "webapp.accounts.backends.AccountBackend"


def _fields(user):
    return {f.attname: getattr(user, f.attname) for f in user._meta.concrete_fields}


def test_the_kept_query_gives_what_the_orm_gives(clinician):
    clinician.first_name, clinician.email = "Anna", "anna@ward.example"
    clinician.save()
    user_by_id(clinician.pk)  # the first call builds and keeps the SQL
    with CaptureQueriesContext(connection) as queries:
        found = user_by_id(clinician.pk)
    assert len(queries) == 1
    assert type(found) is get_user_model()
    assert _fields(found) == _fields(get_user_model().objects.get(pk=clinician.pk))
    assert user_by_id(clinician.pk + 10_000) is None


@pytest.mark.parametrize("backend", [AccountBackend, OIDCBackend])
def test_both_backends_let_in_an_active_account_only(clinician, backend):
    assert backend().get_user(clinician.pk) == clinician
    clinician.is_active = False
    clinician.save()
    assert backend().get_user(clinician.pk) is None
    assert backend().get_user(clinician.pk + 10_000) is None


@pytest.mark.parametrize("path", [LOCAL_BACKEND, OIDC_BACKEND])
def test_a_disabled_accounts_session_ends_at_its_next_request(client, clinician, oidc_on, path):  # noqa: F811
    client.force_login(clinician, backend=path)
    if path == OIDC_BACKEND:  # the provider's re-check is not due
        session = client.session
        session["oidc_id_token_expiration"] = 2**40
        session.save()
    assert client.get(reverse("corpus:list")).status_code == 200
    get_user_model().objects.filter(pk=clinician.pk).update(is_active=False)
    response = client.get(reverse("corpus:list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_local_accounts_sign_in_through_the_kept_query(client, clinician, settings):
    assert LOCAL_BACKEND in settings.AUTHENTICATION_BACKENDS
    assert "django.contrib.auth.backends.ModelBackend" not in settings.AUTHENTICATION_BACKENDS
    clinician.set_password("a long ward password 7")
    clinician.save()
    response = client.post(reverse("login"), {"username": clinician.username, "password": "a long ward password 7"})
    assert response.status_code == 302
    assert client.session["_auth_user_backend"] == LOCAL_BACKEND
    assert client.get(reverse("corpus:list")).status_code == 200
