"""Personal API tokens: made, revoked, checked. The secret is `dsm_` + 40 random URL-safe
characters; only its SHA-256 is stored, so a database copy cannot be replayed.

A request with a token acts as the token's *principal*: the owner as seen through the token, whose
memberships are the owner's roles in the token's projects only (a site admin's token: every role,
in its projects only; never site-wide). The access layer (webapp.projects.scoping) reads those
memberships like any user's, so another project's object is a 404 and a missing capability a 403,
exactly as on the pages. A `read` token may only GET.

Every creation, revocation and refusal (unknown, revoked or expired secret, a write with a read
token, the rate limit) is audited; the secret itself never is.

A request costs one query for the token (its row, owner and project ids: read every time, so a
revocation answers the next request), the roles cache for the owner's roles, and the rate count:
in the cache when it is shared (Redis), else one UPDATE of the token's row; `last_used` is written
by a minute's first request only.
"""

from __future__ import annotations

import copy
import hashlib
import secrets
import time
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Case, DateTimeField, F, PositiveIntegerField, Q, Value, When
from django.utils import timezone

from webapp.api.models import ApiToken
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.projects.models import Project
from webapp.projects.roles import Capability, Role, is_site_admin, roles_of

PREFIX = "dsm_"
MAX_DAYS = 365

CREATE = AuditEvent.Action.CREATE_API_TOKEN
REVOKE = AuditEvent.Action.REVOKE_API_TOKEN
REFUSED = AuditEvent.Action.API_TOKEN_REFUSED


class TokenRefused(Exception):
    """The request's token may not be used; `status` is the HTTP answer (401, 403 or 429)."""

    def __init__(self, message: str, status: int = 401, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def rate_limit() -> int:
    """Requests a token may make in one clock minute (settings.API_RATE_LIMIT_PER_MINUTE, default 120)."""
    return int(getattr(settings, "API_RATE_LIMIT_PER_MINUTE", 120))


def projects_for(user):
    """The projects a user may give a token: those they are a member of (every one for a site admin)."""
    return Project.objects.where(user, Capability.VIEW)


@transaction.atomic
def create(owner, *, name: str, projects, ceiling: str, days: int) -> tuple[ApiToken, str]:
    """Make a token; returns it and its secret (shown once). Projects outside the owner's are refused."""
    allowed = set(projects_for(owner).values_list("pk", flat=True))
    chosen = [p.pk if hasattr(p, "pk") else int(p) for p in projects]
    if not chosen or not set(chosen) <= allowed:
        raise ValueError("Choose one or more of your own projects.")
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"A token lasts between 1 and {MAX_DAYS} days.")
    if ceiling not in ApiToken.Ceiling.values:
        raise ValueError(f"Unknown ceiling {ceiling!r}.")
    secret = PREFIX + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        owner=owner,
        name=name.strip()[:100] or "token",
        prefix=secret[: len(PREFIX) + 4],
        digest=digest_of(secret),
        ceiling=ceiling,
        expires=timezone.now() + timedelta(days=days),
    )
    token.projects.set(chosen)
    for project in token.projects.all():  # one row per project, so each project's admins see it
        record(owner, CREATE, project, token=token.pk, name=token.name, ceiling=ceiling, days=days)
    return token, secret


def revoke(token: ApiToken, actor) -> bool:
    """Revoke a token of `actor` (False when it already was)."""
    changed = ApiToken.objects.filter(pk=token.pk, revoked__isnull=True).update(revoked=timezone.now())
    if changed:
        for project in token.projects.all():
            record(actor, REVOKE, project, token=token.pk, name=token.name)
    return bool(changed)


def authenticate(secret: str, method: str, *, now: float | None = None):
    """The principal a request with `secret` acts as; raises TokenRefused (audited). The token's
    row is read on every request, so a revocation, an expiry, an inactive owner or a changed
    ceiling answers the very next one."""
    token, project_ids = _token_with_projects(secret) if (secret or "").startswith(PREFIX) else (None, [])
    if token is None:
        return _refuse(None, "unknown token", 401)
    if token.revoked is not None:
        return _refuse(token, "revoked token", 401)
    if token.expires <= timezone.now():
        return _refuse(token, "expired token", 401)
    if not token.owner.is_active:
        return _refuse(token, "owner inactive", 401)
    if token.ceiling == ApiToken.Ceiling.READ and method not in ("GET", "HEAD", "OPTIONS"):
        return _refuse(token, "read-only token", 403)
    wait = count_request(token, now=now)
    if wait:
        return _refuse(token, "rate limit", 429, retry_after=wait)
    return principal(token, project_ids)


def _token_with_projects(secret: str) -> tuple[ApiToken | None, list[int]]:
    """The token of `secret` with its owner and its projects' ids, in one query (a row per
    project); a token left with no project (erased) is read on its own."""
    digest = digest_of(secret)
    links = list(ApiToken.projects.through.objects.select_related("apitoken__owner").filter(apitoken__digest=digest))
    if links:
        return links[0].apitoken, [link.project_id for link in links]
    return ApiToken.objects.select_related("owner").filter(digest=digest).first(), []


def count_request(token: ApiToken, *, now: float | None = None) -> int:
    """Count one request in the token's current clock minute; returns 0 when allowed, else the
    seconds until the next minute. Every process agrees on the count: it is kept in the cache when
    the cache is shared (Redis), else on the token's row. `last_used` is written by the minute's
    first request only, so a busy token costs no write per request."""
    now = time.time() if now is None else now
    minute = int(now // 60)
    wait = max(1, 60 - int(now % 60))
    if cache_is_shared():
        count = _count_in_cache(token, minute)
        if count > rate_limit():
            return wait
        if count == 1:
            ApiToken.objects.filter(pk=token.pk).update(last_used=timezone.now())
        return 0
    return 0 if _count_on_row(token, minute) else wait


# Caches that live in one process's memory cannot count for the others.
PER_PROCESS_CACHES = frozenset(
    {"django.core.cache.backends.locmem.LocMemCache", "django.core.cache.backends.dummy.DummyCache"}
)
# The token's id and creation time (a database made again reuses ids) and the unix minute.
RATE_KEY = "api:rate:{}-{}:{}"
RATE_KEY_TIMEOUT = 120  # outlives its minute, whatever second the minute's first request came at


def cache_is_shared() -> bool:
    return settings.CACHES["default"]["BACKEND"] not in PER_PROCESS_CACHES


def _count_in_cache(token: ApiToken, minute: int) -> int:
    """The token's requests in `minute` so far, this one included (atomic in the cache)."""
    key = RATE_KEY.format(token.pk, token.created.timestamp(), minute)
    try:
        return cache.incr(key)
    except ValueError:  # the minute's first request: add keeps whichever process came first
        cache.add(key, 0, RATE_KEY_TIMEOUT)
        return cache.incr(key)


def _count_on_row(token: ApiToken, minute: int) -> bool:
    """One conditional UPDATE (the row lock makes concurrent requests count one after another):
    counted when the row's window is another minute or still has room; False when it is full."""
    same_minute = Q(window_start=minute)
    return bool(
        ApiToken.objects.filter(Q(pk=token.pk) & (~same_minute | Q(window_count__lt=rate_limit()))).update(
            window_count=Case(
                When(same_minute, then=F("window_count") + 1), default=Value(1), output_field=PositiveIntegerField()
            ),
            last_used=Case(
                When(same_minute, then=F("last_used")), default=Value(timezone.now()), output_field=DateTimeField()
            ),
            window_start=minute,
        )
    )


def principal(token: ApiToken, project_ids: list[int] | None = None):
    """The owner as the token lets them act: their roles in the token's projects only (their ids
    read here unless given; the roles from the roles cache, webapp.projects.roles)."""
    owner = token.owner
    if project_ids is None:
        project_ids = list(token.projects.values_list("pk", flat=True))
    if is_site_admin(owner):
        memberships = {pid: frozenset(Role) for pid in project_ids}
    else:
        memberships = {pid: roles_of(owner, pid) for pid in project_ids}
    acting = copy.copy(owner)  # never saved: a view of the owner, not a second account
    acting.is_superuser = False
    acting._dsm_memberships = {pid: roles for pid, roles in memberships.items() if roles}
    acting.api_token = token
    return acting


def _refuse(token: ApiToken | None, reason: str, status: int, retry_after: int | None = None):
    from django.contrib.auth.models import AnonymousUser

    actor = token.owner if token is not None else AnonymousUser()
    record(actor, REFUSED, None, reason=reason, token=token.pk if token else None)
    raise TokenRefused(f"Token refused: {reason}.", status, retry_after)
