"""The top bar of every page (webapp.accounts.templatetags.page_header) is written once per
language, menu entry, role flags and script prefix, then given each request's own values: the
user's name, a CSRF token of the request that a form posts back, the menu of the roles held now."""

import re

import pytest
from django.urls import reverse

from tests.projects import make_member
from webapp.projects.models import Membership

pytestmark = pytest.mark.django_db


def header(response) -> str:
    html = response.content.decode()
    assert "\x00" not in html  # no stand-in left
    return re.search(r'<header class="topbar">.*?</header>', html, re.S)[0]


def tokens(html: str) -> list[str]:
    return re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)


def test_each_user_sees_their_own_name_under_the_same_menu(client, clinician, django_user_model):
    other = django_user_model.objects.create_user("otto", password="a-long-secret-pass-9")
    make_member(other, "clinician")
    client.force_login(clinician)
    first = header(client.get(reverse("review:index")))
    client.force_login(other)
    second = header(client.get(reverse("review:index")))
    assert '<span class="who">clara</span>' in first and '<span class="who">otto</span>' in second
    assert first.replace("clara", "otto").split('<span class="who">')[0] == second.split('<span class="who">')[0]
    assert 'href="/review/" aria-current="page"' in first  # the page's own menu entry


def test_a_role_given_or_taken_changes_the_menu_on_the_next_page(client, clinician):
    client.force_login(clinician)
    import_link = f'href="{reverse("corpus:upload")}"'
    assert import_link not in header(client.get(reverse("home")))
    make_member(clinician, "researcher")  # researchers import
    assert import_link in header(client.get(reverse("home")))
    Membership.objects.filter(user=clinician, role="researcher").delete()
    assert import_link not in header(client.get(reverse("home")))


def test_the_bars_forms_carry_the_requests_own_token_and_log_out_works(client, clinician):
    client.force_login(clinician)
    client.handler.enforce_csrf_checks = True
    page = client.get(reverse("home")).content.decode()
    logout_token, language_token = tokens(header(client.get(reverse("home"))))
    assert logout_token == language_token  # the request's one masked token, as the page's other tags write it
    assert logout_token not in page  # another request: masked afresh
    assert client.post(reverse("logout"), {"csrfmiddlewaretoken": logout_token}).status_code == 302
    assert client.get(reverse("home")).status_code == 302  # signed out: to the login page


@pytest.mark.parametrize(("code", "log_out"), [("it", "Esci"), ("es", "Cerrar sesión")])
def test_the_bar_speaks_the_readers_language(client, clinician, code, log_out):
    client.force_login(clinician)
    english = header(client.get(reverse("home")))
    spoken = header(client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE=code))
    assert "Log out" in english and log_out in spoken and "Log out" not in spoken
    assert f'<option value="{code}" lang="{code}" selected>' in spoken
