"""`{% page_header %}`: the top bar of every page (templates/includes/page_header.html), written
once per process and key (webapp.accounts.stencil), then given the request's own values.

The bar is the same for every request of a language, menu entry (`nav`), set of the role flags it
reads (`can.import`, `can.audit`, `can.manage_members`, site admin, staff) and script prefix, but
rendering it took some 30 URL reversals and 20 translations a page. Each request puts in the
user's name (escaped) and its own CSRF token. The key holds the roles as this request read them
(webapp.projects.roles), so a changed role shows on the next page.
"""

from django import template
from django.urls import get_script_prefix
from django.utils.html import conditional_escape
from django.utils.translation import get_language

from webapp.accounts.stencil import CSRF_INPUT, CSRF_TOKEN, Stencil, csrf_input, stand_in

register = template.Library()

_HEADER = Stencil("includes/page_header.html")
_NAME = stand_in("user-name")
_ROLE_FLAGS = ("import", "audit", "manage_members")


@register.simple_tag(takes_context=True)
def page_header(context):
    user = context.get("user")
    authenticated = bool(user is not None and user.is_authenticated)
    can = context.get("can") or {}
    flags = tuple(bool(can.get(flag)) for flag in _ROLE_FLAGS)
    is_staff = bool(authenticated and user.is_staff)
    site_admin = bool(context.get("site_admin"))
    nav = context.get("nav") if isinstance(context.get("nav"), str) else None
    language = get_language()
    key = (language, get_script_prefix(), authenticated, flags, site_admin, is_staff, nav)
    return _HEADER.html(
        key,
        lambda: {
            "language_code": language,
            "authenticated": authenticated,
            "can": dict(zip(_ROLE_FLAGS, flags)),
            "site_admin": site_admin,
            "is_staff": is_staff,
            "nav": nav,
            "user_name": _NAME,
            "csrf_token": CSRF_TOKEN,
        },  # fmt: skip
        {_NAME: conditional_escape(user.get_username()) if authenticated else "", CSRF_INPUT: csrf_input(context)},
    )
