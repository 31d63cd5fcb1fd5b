"""A site admin makes a local account on the Users page in Chromium; its person signs in."""

import pytest
from django.contrib.auth import get_user_model

from tests.projects import make_member

pytestmark = pytest.mark.django_db(transaction=True)


def _make_account(page, username, way):
    page.goto("/users/")
    page.fill("#id_username", username)
    page.check(f"input[name=way][value={way}]")
    page.click("button:has-text('Make the account')")
    return page.locator("#new-account")


def test_a_user_made_with_a_one_time_password_signs_in(login, site_admin, browser, live_server):
    page = login(site_admin)
    page.click("nav a:has-text('Users')")
    shown = _make_account(page, "nina", "password")
    password = shown.locator("#one-time-password").inner_text()
    page.goto("/users/")  # shown once: not on the page again
    assert page.locator("#one-time-password").count() == 0
    assert page.locator("td", has_text="nina").count() == 1
    make_member(get_user_model().objects.get(username="nina"), "clinician")

    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    other = context.new_page()
    other.goto("/login/")
    other.fill("#id_username", "nina")
    other.fill("#id_password", password)
    other.click("button[type=submit]")
    other.wait_for_url(lambda url: "/password/" in url)  # a one-time password: chosen anew first
    other.fill("#id_old_password", password)
    other.fill("#id_new_password1", "a-long-ward-password-42")
    other.fill("#id_new_password2", "a-long-ward-password-42")
    other.click("button:has-text('Set the password')")
    other.wait_for_url(lambda url: "/password/" not in url)
    assert other.locator("h1").inner_text() == "Welcome, nina"
    context.close()


def test_a_user_made_with_a_set_password_link_sets_it_and_signs_in(login, site_admin, browser, live_server):
    page = login(site_admin)
    link = _make_account(page, "olga", "link").locator("#set-password-link").inner_text()
    make_member(get_user_model().objects.get(username="olga"), "clinician")

    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    other = context.new_page()
    other.goto(link)
    other.fill("#id_new_password1", "a-long-ward-password-42")
    other.fill("#id_new_password2", "a-long-ward-password-42")
    other.click("button:has-text('Set the password')")
    assert other.locator("h1").inner_text() == "Password set"
    other.click("a:has-text('Log in')")
    other.fill("#id_username", "olga")
    other.fill("#id_password", "a-long-ward-password-42")
    other.click("button[type=submit]")
    other.wait_for_url(lambda url: "/login/" not in url)
    assert other.locator("h1").inner_text() == "Welcome, olga"
    other.goto(link)
    assert "no longer works" in other.locator("[role=alert]").inner_text()
    context.close()
