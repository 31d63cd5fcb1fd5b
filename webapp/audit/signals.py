"""Logins, logouts, failed logins and lockouts in the audit log, from Django's and django-axes'
signals (connected in AuditConfig.ready).

One row per login attempt: a failed attempt is `login_failed`, or `locked_out` when it reached the
failure limit or came while the username and address were locked out (django-axes refuses those
without checking the password). Axes sends its lockout signal from inside its own failed-login
handler, before or after ours: whichever of the two runs first writes the row, the second sees the
mark left on the request and adds nothing. The password is never recorded. The username tried is
recorded only when it names an account: people type passwords into the username field, so a
name that matches no account is recorded as UNKNOWN_USERNAME.
"""

from axes.signals import user_locked_out
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

from webapp.audit.log import client_ip, record, record_anonymous
from webapp.audit.models import AuditEvent

MARK = "_audit_login_attempt"  # the request attribute holding this attempt's row
UNKNOWN_USERNAME = "(unknown username)"


@receiver(user_logged_in, dispatch_uid="audit_login")
def audit_login(sender, request, user, **kwargs):
    record(user, AuditEvent.Action.LOGIN, ip=client_ip(request))


@receiver(user_logged_out, dispatch_uid="audit_logout")
def audit_logout(sender, request, user, **kwargs):
    if user is not None:
        record(user, AuditEvent.Action.LOGOUT, ip=client_ip(request))


@receiver(user_login_failed, dispatch_uid="audit_login_failed")
def audit_login_failed(sender, credentials, request=None, **kwargs):
    if request is not None and hasattr(request, MARK):
        return
    username = _known(credentials.get(get_user_model().USERNAME_FIELD, ""))
    event = record_anonymous(username, AuditEvent.Action.LOGIN_FAILED, ip=client_ip(request), **_where(request))
    if request is not None:
        setattr(request, MARK, event)


@receiver(user_locked_out, dispatch_uid="audit_locked_out")
def audit_locked_out(sender, request, username, ip_address, **kwargs):
    failures = getattr(request, "axes_failures_since_start", None)
    event = getattr(request, MARK, None)
    if event is not None:
        event.action = AuditEvent.Action.LOCKED_OUT
        event.details = {**event.details, "failures": failures}
        event.save(update_fields=["action", "details"])
        return
    event = record_anonymous(
        _known(username), AuditEvent.Action.LOCKED_OUT, ip=client_ip(request), failures=failures, **_where(request)
    )
    setattr(request, MARK, event)


def _known(username) -> str:
    """`username` if an account has it (as the login form matches it), else UNKNOWN_USERNAME."""
    User = get_user_model()
    if (
        isinstance(username, str)
        and username
        and User._default_manager.filter(**{User.USERNAME_FIELD: username}).exists()
    ):
        return username
    return UNKNOWN_USERNAME


def _where(request) -> dict:
    return {"path": request.path[:200]} if request is not None else {}
