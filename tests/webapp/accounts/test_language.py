"""The interface's language (webapp.accounts.language): a user's own choice, else their identity
provider's `locale` claim, else the browser's Accept-Language, else English; the menu that saves
the choice and goes back only to a page of this site; the JavaScript catalog; dates and numbers
in the language. The answer says its language (Content-Language, <html lang>) and varies on what
chose it."""

import datetime
import re

import pytest
from django.db import connection
from django.template import Context, Template
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from tests.projects import DEFAULT_SLUG
from webapp.accounts import language
from webapp.accounts.models import Preference
from webapp.accounts.oidc import OIDCBackend

pytestmark = pytest.mark.django_db

# What base.html says in each language (locale/*/LC_MESSAGES/django.po)
LOG_OUT = {"en": "Log out", "it": "Esci", "es": "Cerrar sesión"}
MENU_BUTTON = {"en": "Change language", "it": "Cambia lingua", "es": "Cambiar idioma"}


def spoken(response) -> str:
    """The answer's language, checked to be the same in its header and its page."""
    html_lang = re.search(r'<html lang="([^"]*)"', response.content.decode())
    assert html_lang, "no <html lang>"
    assert response["Content-Language"] == html_lang[1]
    return html_lang[1]


def choose(user, *, chosen="", claimed=""):
    Preference.objects.update_or_create(user=user, defaults={"language": chosen, "claimed_language": claimed})


# ---------------------------------------------------------------- which language


def test_english_without_any_preference(client):
    response = client.get(reverse("login"))
    assert spoken(response) == "en" and MENU_BUTTON["en"] in response.content.decode()
    vary = {part.strip() for part in response["Vary"].split(",")}
    assert {"Accept-Language", "Cookie"} <= vary


@pytest.mark.parametrize("code", ["it", "es"])
def test_the_login_page_speaks_the_browsers_language(client, code):
    response = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE=f"{code}-{code.upper()},{code};q=0.9,en;q=0.5")
    assert spoken(response) == code
    assert MENU_BUTTON[code] in response.content.decode()


def test_a_language_the_interface_lacks_falls_back_to_english(client):
    assert spoken(client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")) == "en"


@pytest.mark.parametrize(
    ("chosen", "claimed", "browser", "expected"),
    [
        ("it", "es", "es", "it"),  # the user's own choice first
        ("", "es", "it", "es"),  # then their provider's claim
        ("", "", "es", "es"),  # then the browser
        ("", "", "de", "en"),  # then English
    ],
)
def test_the_order_a_signed_in_users_language_is_chosen_in(client, clinician, chosen, claimed, browser, expected):
    choose(clinician, chosen=chosen, claimed=claimed)
    client.force_login(clinician)
    response = client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE=browser)
    assert response.status_code == 200 and spoken(response) == expected
    assert LOG_OUT[expected] in response.content.decode()


def test_a_request_reads_no_preference_row_once_signed_in(client, clinician):
    choose(clinician, chosen="es")
    client.force_login(clinician)  # the sign-in reads it, once
    with CaptureQueriesContext(connection) as queries:
        assert spoken(client.get(reverse("home"))) == "es"
    assert not [q for q in queries.captured_queries if "accounts_preference" in q["sql"]]


def test_a_session_from_before_languages_reads_the_profile_once(client, clinician):
    choose(clinician, claimed="it")
    client.force_login(clinician)
    session = client.session
    del session[language.SESSION_KEY]
    session.save()
    assert spoken(client.get(reverse("home"))) == "it"
    with CaptureQueriesContext(connection) as queries:
        assert spoken(client.get(reverse("home"))) == "it"
    assert not [q for q in queries.captured_queries if "accounts_preference" in q["sql"]]


# ---------------------------------------------------------------- the menu


def test_the_menu_is_on_every_page_with_the_current_language_selected(client, clinician):
    client.force_login(clinician)
    page = client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="it").content.decode()
    menu = re.search(r'<form method="post" action="/language/".*?</form>', page, re.S)[0]
    assert 'name="csrfmiddlewaretoken"' in menu and 'name="next"' not in menu  # the Referer is where it goes back
    assert '<option value="it" lang="it" selected>Italiano</option>' in menu
    assert '<option value="es" lang="es">Español</option>' in menu and ">English</option>" in menu
    assert '<button class="link">Cambia lingua</button>' in menu  # sent by a button, keyboard first; no script


def test_a_signed_in_choice_is_saved_on_the_profile_and_goes_back(client, clinician):
    client.force_login(clinician)
    corpora = reverse("corpus:list") + "?page=2"
    response = client.post(reverse("set_language"), {"language": "es"}, HTTP_REFERER=f"http://testserver{corpora}")
    assert response.status_code == 302 and response["Location"] == f"http://testserver{corpora}"
    assert Preference.objects.get(user=clinician).language == "es"
    assert response.cookies["django_language"].value == "es"
    assert response.cookies["django_language"]["httponly"]
    assert spoken(client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="it")) == "es"


@pytest.mark.parametrize(
    "unsafe", ["https://evil.example/", "//evil.example/login/", "javascript:alert(1)", "http://testserver.evil/"]
)
def test_the_menu_goes_back_only_to_a_page_of_this_site(client, clinician, unsafe):
    client.force_login(clinician)
    response = client.post(reverse("set_language"), {"language": "it", "next": unsafe})
    assert response.status_code == 302 and response["Location"] == "/"
    response = client.post(reverse("set_language"), {"language": "it"}, HTTP_REFERER=unsafe)
    assert response.status_code == 302 and response["Location"] == "/"
    assert Preference.objects.get(user=clinician).language == "it"


def test_a_language_the_interface_lacks_is_not_saved(client, clinician):
    client.force_login(clinician)
    response = client.post(reverse("set_language"), {"language": "de", "next": "/"})
    assert response.status_code == 302 and not Preference.objects.filter(user=clinician).exists()
    assert client.get(reverse("set_language")).status_code == 405  # a choice is posted, never a link


def test_the_login_pages_choice_is_the_cookies_then_the_profiles_of_who_signs_in(client, clinician):
    login = reverse("login") + "?next=/corpora/"
    response = client.post(reverse("set_language"), {"language": "it", "next": login})
    assert response.status_code == 302 and response["Location"] == login
    assert not Preference.objects.exists()  # nobody to save it on yet
    assert spoken(client.get(login, HTTP_ACCEPT_LANGUAGE="es")) == "it"  # the cookie before the browser's
    client.force_login(clinician)  # the same session signs in: the choice was theirs
    assert Preference.objects.get(user=clinician).language == "it"
    assert spoken(client.get(reverse("home"))) == "it"


def test_signing_out_forgets_the_users_language_but_not_the_browsers(client, clinician):
    choose(clinician, chosen="es")
    client.force_login(clinician)
    client.post(reverse("logout"))
    assert spoken(client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="it")) == "it"


# ---------------------------------------------------------------- the identity provider's claim


@pytest.mark.parametrize(
    ("claim", "expected"),
    [("it-IT", "it"), ("es_ES", "es"), ("IT", "it"), ("es-419", "es"), ("en-GB", "en"), ("de-DE", ""), ("", "")],
)
def test_a_locale_claim_names_one_of_the_interfaces_languages_or_none(claim, expected):
    assert language.supported(claim) == expected
    assert language.supported(None) == language.supported(["it"]) == ""


def sign_in_with_claims(settings, **claims):
    """The real backend's sign-in with the claims a provider answered (its HTTP calls left out)."""
    settings.OIDC_GROUP_ROLES = {"ward-doctors": ((DEFAULT_SLUG, "clinician"),)}
    backend = OIDCBackend()
    backend.request = RequestFactory().get("/oidc/callback/")
    claims = {"iss": "https://id.hospital.example", "sub": "u-17", "preferred_username": "carla", **claims}
    backend.get_userinfo = lambda access_token, id_token, payload: claims
    return backend.get_or_create_user("access", "id", claims)


def test_the_providers_locale_claim_is_kept_at_each_sign_in_apart_from_the_users_choice(settings):
    user = sign_in_with_claims(settings, groups=["ward-doctors"], locale="it-IT")
    assert Preference.objects.get(user=user).claimed_language == "it"
    Preference.objects.filter(user=user).update(language="es")  # chosen in the menu since
    sign_in_with_claims(settings, groups=["ward-doctors"], locale="de-DE")  # a language we lack
    preference = Preference.objects.get(user=user)
    assert (preference.language, preference.claimed_language) == ("es", "")
    sign_in_with_claims(settings, groups=["ward-doctors"], locale="es-ES")
    assert Preference.objects.get(user=user).claimed_language == "es"


def test_no_claim_makes_no_preference_row(settings):
    user = sign_in_with_claims(settings, groups=["ward-doctors"])
    assert not Preference.objects.filter(user=user).exists()


# ---------------------------------------------------------------- scripts, dates and numbers


def test_the_javascript_catalog_is_loaded_before_every_other_script(client):
    page = client.get(reverse("login")).content.decode()
    scripts = re.findall(r"<script src=\"([^\"]+)\"", page)
    assert scripts[0] == reverse("javascript_catalog")
    catalog = client.get(reverse("javascript_catalog"), HTTP_ACCEPT_LANGUAGE="it")
    assert catalog.status_code == 200 and catalog["Content-Type"].startswith("text/javascript")
    assert "django.gettext" in catalog.content.decode() and catalog["Content-Language"] == "it"


@pytest.mark.parametrize(("code", "expected"), [("en", "Dec. 6, 2026 · 0.85"), ("it", "06 Dicembre 2026 · 0,85")])
def test_dates_and_numbers_follow_the_language(code, expected):
    template = Template("{{ day|date }} · {{ share|floatformat:2 }} · {{ day|date:'Y-m-d' }}")
    with translation.override(code):
        rendered = template.render(Context({"day": datetime.date(2026, 12, 6), "share": 0.8512}))
    assert rendered == f"{expected} · 2026-12-06"  # an explicit format stays as written
