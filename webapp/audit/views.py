"""The audit page (admins): filter the log, page through it newest first (keyset on id, never
OFFSET, so the millionth page costs what the first does), export the filtered rows as CSV (the
export is itself audited). Also the 403 handler, which audits every permission refusal."""

from django.contrib.auth.models import AnonymousUser
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views import defaults

from webapp.audit.export import csv_lines
from webapp.audit.forms import AuditFilterForm
from webapp.audit.log import client_ip, record
from webapp.audit.models import AuditEvent
from webapp.projects.roles import Capability, capability_required

EVENTS_PER_PAGE = 50


@capability_required(Capability.AUDIT)
def event_list(request):
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "audit/event_list.html", {"nav": "audit", "form": form}, status=400)
    events, more = _page(form.events(request.user), before=form.cleaned_data["before"])
    return render(
        request,
        "audit/event_list.html",
        {
            "nav": "audit",
            "form": form,
            "events": events,
            "filtered": bool(form.filters()),
            "older": _query(request, before=events[-1].pk) if more else None,
            "newest": _query(request, before=None) if form.cleaned_data["before"] else None,
            "export": _query(request, before=None),
        },
    )


@capability_required(Capability.AUDIT)
def event_export(request):
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "audit/event_list.html", {"nav": "audit", "form": form}, status=400)
    # The rows as they stand now: not the export's own entry, nor what comes while it streams.
    newest = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    events = form.events(request.user).filter(id__lte=newest)
    record(
        request.user, AuditEvent.Action.EXPORT_AUDIT, ip=client_ip(request), filters=form.filters(), rows=events.count()
    )
    name = f"audit-{timezone.localtime():%Y%m%d-%H%M%S}.csv"
    return StreamingHttpResponse(
        csv_lines(events),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def permission_denied(request, exception):
    """handler403: audit the refusal (who, where; never the page's content), then answer as Django does."""
    user = getattr(request, "user", None) or AnonymousUser()
    record(
        user,
        AuditEvent.Action.PERMISSION_DENIED,
        ip=client_ip(request),
        path=request.path[:200],
        method=request.method,
        reason=str(exception)[:200],
    )
    return defaults.permission_denied(request, exception)


def _page(events, *, before: int | None) -> tuple[list[AuditEvent], bool]:
    """A page of events with ids below `before`, and whether older ones exist."""
    if before:
        events = events.filter(id__lt=before)
    rows = list(events[: EVENTS_PER_PAGE + 1])
    return rows[:EVENTS_PER_PAGE], len(rows) > EVENTS_PER_PAGE


def _query(request, **changes) -> str:
    """The current query string with `changes` applied (None removes a parameter)."""
    query = request.GET.copy()
    for name, value in changes.items():
        query.pop(name, None)
        if value is not None:
            query[name] = value
    return query.urlencode()
