"""The interface's language for each request (docs/i18n.md), in this order: the language a
signed-in user chose in the menu (Preference.language), else the one their identity provider's
`locale` claim named at their last sign-in (Preference.claimed_language), else the browser's
(the language cookie the login page's menu sets, then Accept-Language: Django's
get_language_from_request), else settings.LANGUAGE_CODE.

A user's language is read at sign-in and kept in the session, so a request reads no extra row;
a choice made in the menu updates both. A choice made on the login page, before anyone signed in,
is saved on the profile of whoever signs in next in that session: it was their own.
"""

import re

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.middleware.locale import LocaleMiddleware
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST
from django.views.i18n import set_language

from webapp.accounts.models import Preference

SESSION_KEY = "user_language"  # the signed-in user's language ("" for none), read at sign-in
LOGIN_PAGE_CHOICE = "login_page_language"  # chosen before signing in, saved at sign-in
# The REST API answers in English whatever the caller's Accept-Language: its messages and refusal
# reasons are read by programs and quoted in logs, so they keep one wording (docs/api.md). The
# token and webhook pages under /api/ are pages for a person, in the person's language.
ENGLISH_ONLY_PATHS = ("/api/",)
PAGES_UNDER_API = re.compile(r"/api/(?:tokens/|projects/[-\w]+/webhooks/)\Z")


def supported(code) -> str:
    """The interface language a code names ("it", "it-IT", "it_IT", "IT" -> "it"), or "" for
    anything else (a language the interface does not have, a missing claim, a non-string)."""
    if not isinstance(code, str) or not code.strip():
        return ""
    try:
        return translation.get_supported_language_variant(code.strip().replace("_", "-").lower())
    except LookupError:
        return ""


def users_language(user) -> str:
    """The user's own choice, else their provider's claim; "" when neither."""
    chosen = Preference.objects.filter(user=user).values_list("language", "claimed_language").first() or ()
    return next((code for code in map(supported, chosen) if code), "")


def save_claimed(user, claim) -> None:
    """At an identity-provider sign-in: keep the language its `locale` claim names (a language the
    interface lacks, or none, clears it: the claim is re-read at every sign-in)."""
    claimed = supported(claim)
    preference = Preference.objects.filter(user=user).first()
    if preference is None:
        if claimed:
            Preference.objects.create(user=user, claimed_language=claimed)
    elif preference.claimed_language != claimed:
        preference.claimed_language = claimed
        preference.save(update_fields=["claimed_language"])


def at_sign_in(sender, request, user, **kwargs):
    """user_logged_in: save a choice made on the login page, then keep the user's language in the
    session (read again at every sign-in, so a provider's changed claim shows)."""
    if request is None or not hasattr(request, "session"):
        return
    chosen = supported(request.session.pop(LOGIN_PAGE_CHOICE, ""))
    if chosen:
        Preference.objects.update_or_create(user=user, defaults={"language": chosen})
    request.session[SESSION_KEY] = users_language(user)


class UserLanguageMiddleware(LocaleMiddleware):
    """Django's LocaleMiddleware (its Content-Language and Vary: Accept-Language on the answer)
    with the user's own language first. After AuthenticationMiddleware."""

    def process_request(self, request):
        if request.path_info.startswith(ENGLISH_ONLY_PATHS) and not PAGES_UNDER_API.match(request.path_info):
            language = settings.LANGUAGE_CODE
        else:
            language = self._users(request) or translation.get_language_from_request(request)
        translation.activate(language)
        request.LANGUAGE_CODE = translation.get_language()

    def process_response(self, request, response):
        response = super().process_response(request, response)
        patch_vary_headers(response, ("Cookie",))  # the session's or the language cookie's choice
        return response

    @staticmethod
    def _users(request) -> str:
        session = getattr(request, "session", None)
        if session is None:
            return ""
        if SESSION_KEY in session:  # set at sign-in for this session's user; a session ends at logout
            return supported(session[SESSION_KEY])
        if not request.user.is_authenticated:  # no query for a session without a user
            return ""
        session[SESSION_KEY] = users_language(request.user)  # a session from before languages
        return session[SESSION_KEY]


@login_not_required  # the login page has the menu too
@require_POST
def choose_language(request):
    """The menu: Django's set_language (the language cookie, a redirect to a safe `next` only),
    and the choice saved on the signed-in user's profile, or kept for whoever signs in next."""
    response = set_language(request)
    chosen = supported(request.POST.get("language"))
    if chosen and request.user.is_authenticated:
        Preference.objects.update_or_create(user=request.user, defaults={"language": chosen})
        request.session[SESSION_KEY] = chosen
    elif chosen:
        request.session[LOGIN_PAGE_CHOICE] = chosen
    return response
