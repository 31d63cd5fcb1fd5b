import logging

from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connection
from django.db.models import Q
from django.http import JsonResponse
from django.shortcuts import render

from webapp.audit.models import AuditEvent
from webapp.corpus.stats import corpus_summaries, task_groups
from webapp.projects.roles import Capability, has_capability, require
from webapp.projects.scoping import scope_filter
from webapp.review.waiting import waiting_for

logger = logging.getLogger(__name__)


def home(request):
    require(request.user, Capability.VIEW)
    # Recent activity names objects by id only: the user's own, and for researchers and admins
    # everyone's in the projects where they launch work.
    mine = Q(actor=request.user)
    activity = AuditEvent.objects.filter(mine | scope_filter(AuditEvent, request.user, Capability.LAUNCH))
    return render(
        request,
        "home/home.html",
        {
            "nav": "home",
            "corpora": corpus_summaries(request.user),
            "task_groups": task_groups(request.user),
            "activity": activity[:12],
            # A clinician (reviews, launches nothing) is led straight to the notes waiting for review.
            "review_queue": waiting_for(request.user) if _reviews_only(request.user) else None,
        },
    )


def _reviews_only(user) -> bool:
    return has_capability(user, Capability.REVIEW) and not has_capability(user, Capability.LAUNCH)


@login_not_required
def healthz(request):
    """For load balancers and compose: the app answers and the database is reachable. A database
    that refuses or fails is a 503 with a short body (not the 500 error page), so a probe reads
    "not ready" and the page costs nothing to render."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        logger.warning("healthz: database unreachable (%s)", type(exc).__name__)
        return JsonResponse({"ok": False, "database": "unreachable"}, status=503)
    return JsonResponse({"ok": True})
