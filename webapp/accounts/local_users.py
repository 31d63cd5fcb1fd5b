"""Local accounts made and disabled by site admins in the app: the one place, audited.

A new account gets, once, either a one-time password (random, shown to the site admin on the
page's answer and never stored in clear; its person must choose their own at the first sign-in:
webapp.accounts.password_change) or a set-password link (Django's password reset token:
it stops working once the password is set, or after PASSWORD_RESET_TIMEOUT). Until then the
account has an unusable password. Disabling keeps the account, its memberships and its audit
rows, and ends its sign-ins: an inactive user's session and API tokens are refused.
"""

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from webapp.accounts.models import PasswordChangeRequired
from webapp.audit.log import record
from webapp.audit.models import AuditEvent

ONE_TIME_PASSWORD = "password"
SET_PASSWORD_LINK = "link"


@dataclass(frozen=True)
class NewAccount:
    user: object
    password: str = ""  # the one-time password, when chosen
    link_path: str = ""  # the set-password link's path, when chosen


def set_password_path(user) -> str:
    """The path of a set-password link for `user` (valid until the password changes)."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("password_reset_confirm", args=[uid, default_token_generator.make_token(user)])


def create_local_user(
    *, username: str, email: str = "", first_name: str = "", last_name: str = "", way: str, actor, ip=None
) -> NewAccount:
    """Make an active local account; `way` ONE_TIME_PASSWORD or SET_PASSWORD_LINK says how its
    person gets in. The secret is in the answer only."""
    if way not in (ONE_TIME_PASSWORD, SET_PASSWORD_LINK):
        raise ValueError(f"unknown way to get in: {way!r}")
    with transaction.atomic():
        user = get_user_model().objects.create_user(
            username=username, email=email, first_name=first_name, last_name=last_name
        )
        password = ""
        if way == ONE_TIME_PASSWORD:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            user.save(update_fields=["password"])
            PasswordChangeRequired.objects.create(user=user)  # used once: changed at the first sign-in
        record(actor, AuditEvent.Action.CREATE_USER, user, ip=ip, username=user.get_username(), way=way)
    return NewAccount(user=user, password=password, link_path="" if password else set_password_path(user))


def set_active(user, active: bool, *, actor, ip=None) -> bool:
    """Enable or disable `user`; True if it changed (then audited). Nobody disables themselves."""
    if user.pk == getattr(actor, "pk", None) and not active:
        raise ValueError(_("You cannot disable your own account."))
    if user.is_active == active:
        return False
    with transaction.atomic():
        type(user).objects.filter(pk=user.pk).update(is_active=active)
        user.is_active = active
        action = AuditEvent.Action.ENABLE_USER if active else AuditEvent.Action.DISABLE_USER
        record(actor, action, user, ip=ip, username=user.get_username())
    return True
