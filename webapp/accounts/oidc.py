"""Sign-in through the hospital's identity provider (OpenID Connect, authorization code with PKCE,
through mozilla-django-oidc). On only when OIDC_RP_CLIENT_ID is set; local accounts (the embedded
default's, a break-glass admin) keep the login form beside it.

At every sign-in (and every silent re-check, SessionRefresh below) the user is found by the IdP
account's issuer and subject (OIDCIdentity), created on the first one, and updated from the
claims: email, names, the interface language the `locale` claim names (kept apart from one the
user chose, which comes first: webapp.accounts.language), and the project memberships that
OIDC_GROUP_ROLES grants from the groups claim (memberships the provider no longer grants
removed; those given in the app kept). No granted role in an existing project, or a username a
local account already has, refuses the sign-in with a page that says why. Logins and logouts are
audited by the signals in webapp.audit.signals; refusals and account creation here, membership
changes in webapp.accounts.membership.

A disabled IdP account: every OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS the next GET sends the browser
to the provider with prompt=none; a provider that no longer knows the account answers with an
error and the session ends there.
"""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpResponse
from django.shortcuts import render, resolve_url
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import cached_property
from mozilla_django_oidc import middleware, views
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from webapp.accounts.backends import active_user
from webapp.accounts.language import save_claimed
from webapp.accounts.membership import set_provider_memberships
from webapp.accounts.models import OIDCIdentity
from webapp.accounts.oidc_config import grants_for_groups
from webapp.audit.log import client_ip, record, record_anonymous
from webapp.audit.models import AuditEvent
from webapp.audit.signals import MARK
from webapp.projects.models import Membership, Project

REFUSAL = "_oidc_refusal"  # the request attribute holding why a sign-in was refused
# Errors a provider answers with (OpenID Connect Core 3.1.2.6, RFC 6749 4.1.2.1); any other
# text in the callback's URL is shown and recorded as "other", so a crafted link cannot put
# words on our page.
PROVIDER_ERRORS = frozenset(
    {
        "login_required",
        "interaction_required",
        "consent_required",
        "account_selection_required",
        "access_denied",
        "invalid_request",
        "unauthorized_client",
        "unsupported_response_type",
        "invalid_scope",
        "server_error",
        "temporarily_unavailable",
    }
)


def enabled() -> bool:
    return bool(settings.OIDC_RP_CLIENT_ID)


class SignInRefused(SuspiciousOperation):
    """The provider vouched for the person, but this app does not let them in."""


class OIDCBackend(OIDCAuthenticationBackend):
    def get_user(self, user_id):
        """The session's user, as webapp.accounts.backends reads it: an active account only."""
        return active_user(user_id)

    def get_or_create_user(self, access_token, id_token, payload):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("userinfo is about another subject than the ID token")
        claims = {**payload, **userinfo}  # Entra ID puts the groups in the ID token only
        groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
        grants = _known(grants_for_groups(groups, settings.OIDC_GROUP_ROLES))
        identity = (
            OIDCIdentity.objects.select_related("user").filter(issuer=payload["iss"], subject=payload["sub"]).first()
        )
        user = identity.user if identity else None
        if user is not None and not user.is_active:
            self._refuse(user, "account disabled in this app", groups)
        if user is None and grants and _taken(username_from(claims)):
            self._refuse(username_from(claims), "username belongs to a local account", groups)
        with transaction.atomic():
            if user is None and grants:
                user = self._create(claims, payload, groups)
            if user is not None:
                self._update(user, claims)
                set_provider_memberships(user, grants, ip=client_ip(self.request), groups=_names(groups))
        if not grants and (user is None or not Membership.objects.filter(user=user).exists()):
            # Memberships a project admin gave in the app let a person in without a mapped group.
            self._refuse(user or username_from(claims), "no project role for these groups", groups)
        return user

    def _create(self, claims, payload, groups):
        user = get_user_model().objects.create_user(username_from(claims))  # no usable password
        OIDCIdentity.objects.create(user=user, issuer=payload["iss"], subject=payload["sub"])
        record(user, AuditEvent.Action.ACCOUNT_CREATED, user, ip=client_ip(self.request), issuer=payload["iss"])
        return user

    def _update(self, user, claims):
        fields = {
            "email": claims.get("email") or "",
            "first_name": (claims.get("given_name") or "")[:150],
            "last_name": (claims.get("family_name") or "")[:150],
        }
        changed = [name for name, value in fields.items() if getattr(user, name) != value]
        for name in changed:
            setattr(user, name, fields[name])
        if changed:
            user.save(update_fields=changed)
        save_claimed(user, claims.get("locale"))

    def _refuse(self, who, reason: str, groups):
        """Audit the refusal (marking the request, so the failed-login signal adds no second row)
        and stop the sign-in; the callback shows `reason`."""
        ip = client_ip(self.request)
        details = {"via": "oidc", "reason": reason, "groups": _names(groups)}
        if isinstance(who, str):
            event = record_anonymous(who, AuditEvent.Action.LOGIN_REFUSED, ip=ip, **details)
        else:
            event = record(who, AuditEvent.Action.LOGIN_REFUSED, who, ip=ip, **details)
        setattr(self.request, MARK, event)
        setattr(self.request, REFUSAL, reason)
        raise SignInRefused(reason)


def is_provider_sign_in(request, credentials=None) -> bool:
    """AXES_WHITELIST_CALLABLE: the provider's answer is no password tried here (the provider
    guards its own form), so django-axes neither counts a refused one nor locks a ward's address
    out of signing in."""
    return request is not None and request.path == reverse("oidc_authentication_callback")


def username_from(claims) -> str:
    return str(claims.get("preferred_username") or claims["sub"])[:150]


def _taken(username: str) -> bool:
    return get_user_model().objects.filter(username__iexact=username).exists()


def _known(grants):
    """The grants naming a project that exists (a site admin makes projects; a mapping may name
    one before it is made)."""
    slugs = set(Project.objects.filter(slug__in={slug for slug, _ in grants}).values_list("slug", flat=True))
    return frozenset(grant for grant in grants if grant[0] in slugs)


def _names(groups) -> list[str]:
    groups = [groups] if isinstance(groups, str) else groups
    return [str(group)[:100] for group in groups][:20] if isinstance(groups, list | tuple) else []


class AuthenticateView(views.OIDCAuthenticationRequestView):
    """Sends the browser to the provider (with a PKCE challenge); 404 while OIDC is off."""

    def __init__(self, *args, **kwargs):
        if not enabled():
            raise Http404("Sign-in through an identity provider is not configured")
        super().__init__(*args, **kwargs)


class CallbackView(views.OIDCAuthenticationCallbackView):
    """The provider's answer. A refusal or an error is a page that says why, not a bare redirect."""

    def get(self, request):
        if not enabled():
            raise Http404("Sign-in through an identity provider is not configured")
        return super().get(request)

    def login_failure(self):
        request = self.request
        reason = getattr(request, REFUSAL, None)
        error = request.GET.get("error", "")
        error = error if error in PROVIDER_ERRORS or not error else "other"
        if reason is None and error:
            record_anonymous(
                "(unknown username)", AuditEvent.Action.LOGIN_FAILED, ip=client_ip(request), via="oidc", error=error
            )
        context = {"provider": settings.OIDC_PROVIDER_NAME, "reason": reason, "error": error}
        return render(request, "registration/oidc_refused.html", context, status=403)


def provider_logout_url(request) -> str:
    """Where logging out sends the browser (OIDC_OP_LOGOUT_URL_METHOD): the provider's
    end_session endpoint for a user who signed in there, so their IdP session ends too; else the
    login page."""
    after = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    id_token = request.session.get("oidc_id_token")
    if not (enabled() and settings.OIDC_OP_LOGOUT_ENDPOINT and id_token):
        return resolve_url(settings.LOGOUT_REDIRECT_URL)
    query = urlencode(
        {"id_token_hint": id_token, "post_logout_redirect_uri": after, "client_id": settings.OIDC_RP_CLIENT_ID}
    )
    return f"{settings.OIDC_OP_LOGOUT_ENDPOINT}?{query}"


class LogoutView(views.OIDCLogoutView):
    """POST only, like Django's; ends the IdP session too where the provider supports it."""


def _setting(name):
    return property(lambda self: getattr(settings, name))


class SessionRefresh(middleware.SessionRefresh):
    """mozilla-django-oidc's silent re-check, reading the settings at each request (off while
    OIDC is off), so sessions of local accounts are never touched."""

    OIDC_EXEMPT_URLS = ()
    OIDC_OP_AUTHORIZATION_ENDPOINT = _setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
    OIDC_RP_CLIENT_ID = _setting("OIDC_RP_CLIENT_ID")
    OIDC_RP_SCOPES = _setting("OIDC_RP_SCOPES")
    OIDC_STATE_SIZE = 32
    OIDC_NONCE_SIZE = 32
    OIDC_USE_NONCE = True
    OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"

    def __init__(self, get_response):
        MiddlewareMixin.__init__(self, get_response)

    @cached_property
    def exempt_urls(self):
        return {reverse("oidc_authentication_init"), reverse("oidc_authentication_callback"), reverse("logout")}

    def process_request(self, request):
        if not enabled():
            return None
        response = super().process_request(request)
        if response is not None and request.headers.get("HX-Request"):
            # A poll or fragment cannot follow a redirect to the provider (another origin): the
            # page reloads instead, and its own request makes the check.
            return HttpResponse(status=204, headers={"HX-Refresh": "true"})
        return response
