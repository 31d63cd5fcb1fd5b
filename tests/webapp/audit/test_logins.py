"""Logins, logouts, failed logins and lockouts (django-axes), through the real login form."""

import datetime

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.db.models import F
from django.urls import reverse

from tests.conftest import PASSWORD
from webapp.audit.models import AuditEvent
from webapp.audit.signals import UNKNOWN_USERNAME

WRONG = "Hunter2-not-the-password"


def post_login(client, username, password, address="127.0.0.1"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def events(action):
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


@pytest.fixture
def limit(settings):
    return settings.AXES_FAILURE_LIMIT


def fail_until_locked(client, username, limit, address="127.0.0.1"):
    for _ in range(limit - 1):
        assert post_login(client, username, WRONG, address).status_code == 200
    response = post_login(client, username, WRONG, address)
    assert response.status_code == 429
    return response


def test_a_login_and_a_logout_are_audited_with_the_address(client, clinician):
    assert post_login(client, "clara", PASSWORD, "10.20.30.40").status_code == 302
    client.post(reverse("logout"), REMOTE_ADDR="10.20.30.41")
    [login] = events(AuditEvent.Action.LOGIN)
    [logout] = events(AuditEvent.Action.LOGOUT)
    assert (login.actor, login.actor_name, login.ip) == (clinician, "clara", "10.20.30.40")
    assert (logout.actor, logout.actor_name, logout.ip) == (clinician, "clara", "10.20.30.41")


def test_a_failed_login_records_the_username_tried_and_the_address_never_the_password(client, clinician):
    response = post_login(client, "clara", WRONG, "192.0.2.7")
    assert response.status_code == 200 and "didn't match" in response.content.decode()
    post_login(client, "no-such-user", WRONG, "192.0.2.7")
    first, second = events(AuditEvent.Action.LOGIN_FAILED)
    assert (first.actor, first.actor_name, first.ip, first.details) == (None, "clara", "192.0.2.7", {"path": "/login/"})
    assert second.actor_name == UNKNOWN_USERNAME  # not what was typed: it may be a password
    assert not events(AuditEvent.Action.LOGIN)
    for event in AuditEvent.objects.all():
        assert WRONG not in f"{event.actor_name} {event.details}"
    assert not AccessAttempt.objects.filter(post_data__contains=WRONG).exists()


def test_repeated_failures_lock_the_username_at_that_address_out(client, clinician, limit):
    response = fail_until_locked(client, "clara", limit)
    page = response.content.decode()
    assert f"Too many failed logins ({limit})" in page and "Try again in 15 minutes" in page
    assert len(events(AuditEvent.Action.LOGIN_FAILED)) == limit - 1
    [locked] = events(AuditEvent.Action.LOCKED_OUT)
    assert (locked.actor_name, locked.ip, locked.details) == (
        "clara",
        "127.0.0.1",
        {"path": "/login/", "failures": limit},
    )

    # the right password is refused too while locked out, and that try is audited as locked out
    assert post_login(client, "clara", PASSWORD).status_code == 429
    assert client.get(reverse("home")).status_code == 302
    assert len(events(AuditEvent.Action.LOCKED_OUT)) == 2 and not events(AuditEvent.Action.LOGIN)


def test_the_lockout_holds_only_that_username_at_that_address(client, clinician, researcher, limit):
    fail_until_locked(client, "clara", limit, "127.0.0.1")
    assert post_login(client, "rita", PASSWORD, "127.0.0.1").status_code == 302
    client.post(reverse("logout"))
    assert post_login(client, "clara", PASSWORD, "10.0.0.9").status_code == 302


def test_the_lockout_ends_after_the_cool_off(client, clinician, limit, settings):
    fail_until_locked(client, "clara", limit)
    cool_off = settings.AXES_COOLOFF_TIME
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - cool_off - datetime.timedelta(seconds=1))
    assert post_login(client, "clara", PASSWORD).status_code == 302
    assert events(AuditEvent.Action.LOGIN)[0].actor == clinician


def test_an_admin_unlocks_a_username_at_once(client, clinician, limit):
    fail_until_locked(client, "clara", limit)
    call_command("axes_reset_username", "clara")
    assert post_login(client, "clara", PASSWORD).status_code == 302


def test_a_successful_login_starts_the_count_again(client, clinician, limit):
    for _ in range(limit - 1):
        post_login(client, "clara", WRONG)
    assert post_login(client, "clara", PASSWORD).status_code == 302
    client.post(reverse("logout"))
    for _ in range(limit - 1):
        assert post_login(client, "clara", WRONG).status_code == 200
    assert post_login(client, "clara", PASSWORD).status_code == 302


def test_the_admin_login_is_protected_and_audited_too(client, admin_user, limit):
    url = reverse("admin:login")
    for _ in range(limit):
        response = client.post(url, {"username": "ada", "password": WRONG}, REMOTE_ADDR="198.51.100.3")
    assert response.status_code == 429
    [locked] = events(AuditEvent.Action.LOCKED_OUT)
    assert (locked.actor_name, locked.ip, locked.details["path"]) == ("ada", "198.51.100.3", url)


def test_a_password_typed_as_the_username_is_never_recorded(client, site_admin, clinician, limit):
    fail_until_locked(client, PASSWORD, limit, "192.0.2.8")  # the password, typed into the wrong field
    failed, locked = events(AuditEvent.Action.LOGIN_FAILED), events(AuditEvent.Action.LOCKED_OUT)
    assert len(failed) == limit - 1 and len(locked) == 1
    assert {event.actor_name for event in failed + locked} == {UNKNOWN_USERNAME}
    client.force_login(site_admin)  # sign-in rows belong to no project: a site admin's page lists them
    exported = b"".join(client.get(reverse("audit:export")).streaming_content).decode()
    page = client.get(reverse("audit:list")).content.decode()
    assert PASSWORD not in exported and PASSWORD not in page and UNKNOWN_USERNAME in exported


def test_axes_keeps_a_digest_of_a_username_no_account_has_and_still_locks_it_out(client, clinician, limit):
    fail_until_locked(client, PASSWORD, limit, "192.0.2.9")
    [attempt] = AccessAttempt.objects.all()
    assert attempt.username.startswith("unknown:") and PASSWORD not in attempt.username
    assert attempt.failures_since_start == limit
    assert post_login(client, "clara", PASSWORD, "192.0.2.9").status_code == 302  # another name: not locked
    fail_until_locked(client, "clara", limit, "192.0.2.10")
    assert AccessAttempt.objects.filter(username="clara").exists()  # an account's name is kept as typed
