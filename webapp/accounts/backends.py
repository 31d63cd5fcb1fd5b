"""The signed-in user of each request, read by a query built once per process.

Django's `ModelBackend.get_user` runs on every request and builds its query through the ORM each
time: about 1 ms of the web server's CPU on the review loop's answers (issue 41), for a SELECT by
primary key that PostgreSQL answers in microseconds. `user_by_id` runs the ORM's own SQL, kept by
webapp.db.prepared, and gives the same model instance.

Both sign-in paths use it: `AccountBackend` (local accounts, in AUTHENTICATION_BACKENDS in place
of ModelBackend) and `webapp.accounts.oidc.OIDCBackend`. Each lets in an active account only, so
deactivating an account ends its sessions at their next request, whichever way it signed in.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend

from webapp.db.prepared import Prepared


def _by_id(_shape, *, user_id):
    return get_user_model()._default_manager.filter(pk=user_id)


_USER_BY_ID = Prepared(_by_id)


def user_by_id(user_id):
    """The user with this primary key, or None."""
    found = _USER_BY_ID.objects(None, user_id=int(user_id))
    return found[0] if found else None


def active_user(user_id):
    """The user with this primary key if the account may sign in (ModelBackend's rule: active)."""
    user = user_by_id(user_id)
    return user if user is not None and getattr(user, "is_active", True) else None


class AccountBackend(ModelBackend):
    """Django's ModelBackend (passwords, permissions), the session's user read by `active_user`."""

    def get_user(self, user_id):
        return active_user(user_id)
