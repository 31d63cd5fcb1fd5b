"""`Authorization: Bearer <token>` for the API (webapp.api.tokens decides; this is ninja's glue),
and who may read the API's docs page and schema."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from ninja.security import HttpBearer

from webapp.api import tokens


class BearerToken(HttpBearer):
    def authenticate(self, request, token):
        acting = tokens.authenticate(token, request.method)  # raises TokenRefused
        request.user = acting  # the audit log and the access layer see the token's principal
        return acting


def signed_in_or_token(view):
    """The docs page and the schema need an identity like every page: a signed-in session (the
    docs page in a browser) or a valid token (a script reading the schema). Anyone else is sent to
    sign in, or, asking for the schema, answered 401."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        header = request.headers.get("Authorization", "")
        if not request.user.is_authenticated and header.startswith("Bearer "):
            try:
                tokens.authenticate(header.removeprefix("Bearer ").strip(), "GET")
            except tokens.TokenRefused as exc:
                return JsonResponse({"detail": str(exc)}, status=exc.status)
        elif not request.user.is_authenticated:
            if request.path.endswith(".json"):
                return JsonResponse({"detail": "Sign in, or send an API token."}, status=401)
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapped
