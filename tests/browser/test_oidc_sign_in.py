"""Sign-in through a real OpenID provider (oidc-provider on Node, tests/oidc) in Chromium: the
provider's own login form, the groups claim mapped to project roles at every sign-in (only the
mapped projects visible), logout ending the provider's session, refusals, and a disabled IdP
account losing its session at the next check."""

import re
import time

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model

from tests.oidc import provider as oidc_provider
from tests.projects import DEFAULT_SLUG, default_project
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus
from webapp.projects.models import Membership, Project

pytestmark = pytest.mark.django_db(transaction=True)

PROVIDER_NAME = "Hospital ID"
GROUP_ROLES = {
    "ward-doctors": ((DEFAULT_SLUG, "clinician"),),
    "research-team": ((DEFAULT_SLUG, "researcher"),),
    "oncology-study": (("not-made-yet", "researcher"),),  # a project a site admin has not made: no grant
}


def carla(groups, disabled=False):
    claims = {
        "preferred_username": "carla",
        "email": "carla@hospital.example",
        "given_name": "Carla",
        "family_name": "Rossi",
        "groups": groups,
    }
    return {"claims": claims, "disabled": disabled}


ACCOUNTS = {
    "u1": carla(["ward-doctors", "all-staff"]),
    "u2": {"claims": {"preferred_username": "bruno", "groups": ["cafeteria"]}},
}


@pytest.fixture
def idp(live_server, settings, tmp_path):
    provider = oidc_provider.start(live_server.url, ACCOUNTS, tmp_path)
    for name, value in provider.app_settings().items():
        setattr(settings, name, value)
    settings.OIDC_PROVIDER_NAME = PROVIDER_NAME
    settings.OIDC_GROUP_ROLES = GROUP_ROLES
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "webapp.accounts.oidc.OIDCBackend"]
    directives = settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]
    settings.CONTENT_SECURITY_POLICY = {
        "DIRECTIVES": {**directives, "form-action": [*directives["form-action"], provider.issuer]}
    }
    yield provider
    oidc_provider.stop(provider)


def sign_in(page, idp, account):
    page.goto("/login/")
    page.click(f"text=Sign in with {PROVIDER_NAME}")
    page.wait_for_url(f"{idp.issuer}/**")
    page.fill("input[name=login]", account)
    page.fill("input[name=password]", "any password: the provider's development form checks none")
    page.click("button.login-submit")
    page.wait_for_url(lambda url: not url.startswith(idp.issuer))
    return page


def memberships_of(user):
    return set(Membership.objects.filter(user=user).values_list("project__slug", "role"))


def actions_for(name):
    return list(AuditEvent.objects.filter(actor_name=name).order_by("id").values_list("action", flat=True))


def test_a_clinician_signs_in_at_the_provider_logs_out_there_and_gets_a_new_role_at_the_next_sign_in(page, idp):
    corpus = Corpus.objects.create(project=default_project(), name="ed-demo", language="it")
    elsewhere = Project.objects.create(name="Oncology", slug="oncology")
    hidden = Corpus.objects.create(project=elsewhere, name="onco-notes", language="it")

    sign_in(page, idp, "u1")
    assert page.locator("h1").inner_text() == "Welcome, carla"
    user = get_user_model().objects.get(username="carla")
    assert (user.email, user.first_name, user.last_name) == ("carla@hospital.example", "Carla", "Rossi")
    assert memberships_of(user) == {(DEFAULT_SLUG, "clinician")}
    assert not user.has_usable_password()
    assert page.goto(f"/review/{corpus.pk}/queue/").status == 200  # clinicians review
    assert page.goto("/corpora/import/").status == 403  # researchers import
    page.goto("/corpora/")
    assert "ed-demo" in page.content() and "onco-notes" not in page.content()  # only the mapped project
    assert page.goto(f"/corpora/{hidden.pk}/").status == 404
    assert actions_for("carla")[:3] == ["account_created", "add_member", "login"]
    added = AuditEvent.objects.get(action="add_member", actor=user)
    assert (added.details["role"], added.details["user"], added.project_id) == ("clinician", "carla", corpus.project_id)
    assert added.details["groups"] == ["ward-doctors", "all-staff"]

    page.goto("/")
    page.click("text=Log out")
    page.wait_for_url(f"{idp.issuer}/**")  # the provider's end_session page
    page.click("text=Yes, sign me out")
    page.wait_for_url(re.compile(r"/login/$"))
    assert page.goto("/").url.endswith("/login/?next=/")
    # The provider's session ended: signing in asks for the login again.
    page.click(f"text=Sign in with {PROVIDER_NAME}")
    page.wait_for_url(f"{idp.issuer}/**")
    assert page.locator("input[name=login]").is_visible()

    idp.set_accounts({**ACCOUNTS, "u1": carla(["research-team"])})
    page.fill("input[name=login]", "u1")
    page.fill("input[name=password]", "x")
    page.click("button.login-submit")
    page.wait_for_url(lambda url: not url.startswith(idp.issuer))
    assert page.locator("h1").inner_text() == "Welcome, carla"
    assert memberships_of(user) == {(DEFAULT_SLUG, "researcher")}
    assert page.goto("/corpora/import/").status == 200
    assert page.goto(f"/review/{corpus.pk}/queue/").status == 403
    assert AuditEvent.objects.filter(action="add_member", actor=user).first().details["role"] == "researcher"
    assert AuditEvent.objects.get(action="remove_member", actor=user).details["role"] == "clinician"
    assert get_user_model().objects.filter(username="carla").count() == 1  # the same account


def test_a_person_with_no_mapped_group_is_refused_with_a_page_that_says_why(page, idp):
    sign_in(page, idp, "u2")
    assert "Sign-in refused" in page.locator("h1").inner_text()
    assert "none of your groups" in page.locator("[role=alert]").inner_text()
    assert not get_user_model().objects.filter(username="bruno").exists()
    [refusal] = AuditEvent.objects.filter(action="login_refused")
    assert (refusal.actor, refusal.actor_name) == (None, "bruno")
    assert refusal.details == {"via": "oidc", "reason": "no project role for these groups", "groups": ["cafeteria"]}
    assert not AuditEvent.objects.filter(action="login_failed").exists()  # one row for one refusal
    assert not AccessAttempt.objects.exists()  # no password was tried here: no lockout counts it
    assert page.goto("/").url.endswith("/login/?next=/")


def test_a_provider_account_cannot_take_over_a_local_account_of_the_same_name(page, idp, django_user_model):
    local = django_user_model.objects.create_user("carla", password="break-glass-password-1")
    sign_in(page, idp, "u1")
    assert "belongs to a local account" in page.locator("[role=alert]").inner_text()
    assert memberships_of(local) == set()
    assert AuditEvent.objects.get(action="login_refused").details["reason"] == "username belongs to a local account"


def test_a_user_who_loses_every_mapped_group_loses_their_roles_and_is_refused(page, idp):
    sign_in(page, idp, "u1")
    page.goto("/")
    page.click("text=Log out")
    page.click("text=Yes, sign me out")
    page.wait_for_url(re.compile(r"/login/$"))
    idp.set_accounts({**ACCOUNTS, "u1": carla(["all-staff"])})
    sign_in(page, idp, "u1")
    assert "none of your groups" in page.locator("[role=alert]").inner_text()
    user = get_user_model().objects.get(username="carla")
    assert memberships_of(user) == set()
    assert actions_for("carla")[-2:] == ["remove_member", "login_refused"]


def test_a_disabled_provider_account_loses_its_session_at_the_next_check(page, idp, settings):
    settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 3
    sign_in(page, idp, "u1")
    assert page.locator("h1").inner_text() == "Welcome, carla"
    idp.set_accounts({**ACCOUNTS, "u1": carla(["ward-doctors"], disabled=True)})
    time.sleep(3.5)
    page.goto("/corpora/")  # the check goes to the provider (prompt=none), which no longer knows u1
    assert "Sign-in refused" in page.locator("h1").inner_text()
    assert page.goto("/corpora/").url.endswith("/login/?next=/corpora/")
    assert "logout" in actions_for("carla")
    assert AuditEvent.objects.filter(action="login_failed", details__error="login_required").exists()
