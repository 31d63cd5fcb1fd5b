"""`Authorization: Bearer <token>` for the API (webapp.api.tokens decides; this is ninja's glue)."""

from ninja.security import HttpBearer

from webapp.api import tokens


class BearerToken(HttpBearer):
    def authenticate(self, request, token):
        acting = tokens.authenticate(token, request.method)  # raises TokenRefused
        request.user = acting  # the audit log and the access layer see the token's principal
        return acting
