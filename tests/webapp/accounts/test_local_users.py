"""The Users page: site admins make local accounts (a one-time password or a set-password link,
shown once), disable and enable them, and see each account's projects; every change audited."""

import re

from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.projects import default_project, make_member
from webapp.audit.models import AuditEvent


def test_only_a_site_admin_sees_the_users_page_and_makes_accounts(client_for, admin_user):
    assert client_for(admin_user).get(reverse("accounts:users")).status_code == 403
    response = client_for(admin_user).post(reverse("accounts:user_new"), {"username": "x", "way": "password"})
    assert response.status_code == 403
    assert not get_user_model().objects.filter(username="x").exists()


def test_a_site_admin_makes_an_account_with_a_one_time_password_shown_once(client_for, site_admin, client):
    client = client_for(site_admin)
    response = client.post(
        reverse("accounts:user_new"),
        {"username": "nina", "first_name": "Nina", "last_name": "Rossi", "email": "n@ward.example", "way": "password"},
    )
    assert response.status_code == 200 and "no-store" in response.headers["Cache-Control"]
    password = re.search(r'id="one-time-password">([^<]+)<', response.content.decode()).group(1)
    nina = get_user_model().objects.get(username="nina")
    assert nina.is_active and nina.get_full_name() == "Nina Rossi" and nina.check_password(password)
    assert password not in client.get(reverse("accounts:users")).content.decode()
    event = AuditEvent.objects.get(action="create_user")
    assert event.actor == site_admin and event.object_id == str(nina.pk) and event.details["way"] == "password"
    assert password not in str(event.details)


def test_a_one_time_password_is_changed_at_the_first_sign_in_before_anything_else(client_for, site_admin, client):
    response = client_for(site_admin).post(reverse("accounts:user_new"), {"username": "nina", "way": "password"})
    password = re.search(r'id="one-time-password">([^<]+)<', response.content.decode()).group(1)
    nina = get_user_model().objects.get(username="nina")
    make_member(nina, "clinician")
    client.logout()
    assert client.post(reverse("login"), {"username": "nina", "password": password}).status_code == 302
    for path in ("/", reverse("projects:list"), reverse("api_tokens")):  # no token can be made either
        answer = client.get(path)
        assert answer.status_code == 302 and answer.url == reverse("password_change"), path
    new = "a-long-ward-password-42"
    changed = client.post(
        reverse("password_change"), {"old_password": password, "new_password1": new, "new_password2": new}
    )
    assert changed.status_code == 302 and changed.url == reverse("home")
    assert client.get("/").status_code == 200  # signed in still, free to go on
    nina.refresh_from_db()
    assert nina.check_password(new) and not nina.check_password(password)  # the one-time one is spent
    client.logout()
    assert client.post(reverse("login"), {"username": "nina", "password": new}).status_code == 302
    assert client.get("/").status_code == 200  # asked once only


def test_a_set_password_link_works_once(client_for, site_admin, client):
    response = client_for(site_admin).post(reverse("accounts:user_new"), {"username": "olga", "way": "link"})
    link = re.search(r'id="set-password-link">([^<]+)<', response.content.decode()).group(1)
    olga = get_user_model().objects.get(username="olga")
    assert not olga.has_usable_password()
    client.logout()
    form = client.get(link, follow=True)  # Django moves the token into the session, then shows the form
    assert "new_password1" in form.content.decode()
    new = "a-long-ward-password-42"
    done = client.post(form.redirect_chain[-1][0], {"new_password1": new, "new_password2": new}, follow=True)
    assert "Password set" in done.content.decode()
    olga.refresh_from_db()
    assert olga.check_password(new)
    assert "no longer works" in client.get(link, follow=True).content.decode()


def test_a_username_taken_is_refused_in_words(client_for, site_admin, clinician):
    response = client_for(site_admin).post(reverse("accounts:user_new"), {"username": "CLARA", "way": "link"})
    assert response.status_code == 400 and "already has this username" in response.content.decode()


def test_a_site_admin_disables_and_enables_an_account_and_sees_its_projects(client_for, site_admin, clinician):
    from django.test import Client

    signed_in = Client()
    signed_in.force_login(clinician)
    assert signed_in.get(reverse("corpus:list")).status_code == 200
    client = client_for(site_admin)
    page = client.get(reverse("accounts:users")).content.decode()
    assert "clara" in page and f"{default_project().name}</a> (clinician)" in page
    client.post(reverse("accounts:user_active"), {"user": clinician.pk, "active": "0"})
    clinician.refresh_from_db()
    assert not clinician.is_active
    assert AuditEvent.objects.get(action="disable_user").object_id == str(clinician.pk)
    assert "/login/" in signed_in.get(reverse("corpus:list")).url  # the open session ends too
    client.logout()
    refused = client.post(reverse("login"), {"username": "clara", "password": "correct-horse-battery-staple"})
    assert refused.status_code == 200 and "didn't match" in refused.content.decode()
    client.force_login(site_admin)
    client.post(reverse("accounts:user_active"), {"user": clinician.pk, "active": "1"})
    clinician.refresh_from_db()
    assert clinician.is_active and AuditEvent.objects.filter(action="enable_user").count() == 1


def test_a_site_admin_cannot_disable_themselves(client_for, site_admin):
    client_for(site_admin).post(reverse("accounts:user_active"), {"user": site_admin.pk, "active": "0"}, follow=True)
    site_admin.refresh_from_db()
    assert site_admin.is_active and not AuditEvent.objects.filter(action="disable_user").exists()
