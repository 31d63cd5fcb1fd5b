"""The name django-axes counts failed logins under (AXES_USERNAME_CALLABLE).

A person who types their password into the username field would otherwise leave it in axes'
own tables (AccessAttempt, AccessFailureLog), readable in the admin. A name that no account has
is kept as a keyed digest instead: the same typed text still gives the same key, so lockouts
per (username, address) work as before, and nothing readable is stored.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.contrib.auth import get_user_model


def lockout_username(request, credentials: dict | None = None) -> str | None:
    field = settings.AXES_USERNAME_FORM_FIELD
    typed = (credentials or {}).get(field)
    if typed is None and request is not None:
        typed = getattr(request, "data", request.POST).get(field)
    if not typed:
        return typed
    user_model = get_user_model()
    if user_model._default_manager.filter(**{user_model.USERNAME_FIELD: typed}).exists():
        return typed
    digest = hmac.new(settings.SECRET_KEY.encode(), typed.encode(), hashlib.sha256).hexdigest()
    return f"unknown:{digest[:20]}"
