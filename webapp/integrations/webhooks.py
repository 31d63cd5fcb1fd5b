"""Webhook deliveries: what is sent, how it is signed, where it may go, one attempt, and the
outbox that makes deliveries survive a broker outage or a worker's death.

Body: JSON, `{"event", "delivery", "project": {"id", "slug"}, "object": {"type", "id"}, "status",
"counts"}`: ids, statuses and counts only, never note text or error messages (which may quote a
file). Headers: `X-DSM-Event`, `X-DSM-Delivery` (the delivery's id: the same on every retry, so a
receiver can drop duplicates) and `X-DSM-Signature: sha256=<hex HMAC-SHA256 of the body with the
webhook's secret>`.

Where: the URL is checked by the outbound policy (webapp.lib.outbound: http/https to public
addresses, or OUTBOUND_ALLOWED_NETWORKS) when the webhook is added and again before every
attempt, and the attempt connects to the address that was checked. A 2xx answer delivers it; a
redirect is not followed and counts as a failed attempt; another status, a refused connection, a
timeout or an unresolvable host is tried again after WEBHOOK_BACKOFF_SECONDS x 2^(attempt-1),
WEBHOOK_MAX_ATTEMPTS attempts in all, then the delivery is failed. An address the policy refuses
fails it at once. Each attempt's outcome is kept on the row (the page's log).

The outbox: the row is the message. A delivery is `due` at a time; its task (workers.webhooks,
queue "webhooks", never the queues of imports and builds) claims it for one attempt with a
conditional UPDATE, so two workers never send it at once, and a webhook switched off is never
claimed again. No retry waits in the broker: after a failed attempt the row is due later, and the
recovery sweeper every worker runs (webapp.lifecycle.recovery, `send_due`) queues each due row
that has no live message: a retry, one whose message was lost with Redis, one whose worker was
killed mid-attempt (its claim expires). A duplicate message finds the row claimed or no longer
due and does nothing.

A delivery's `error` is English (the API reads it as stored): the templates below and the outbound
policy's (webapp.lib.outbound), shown on the webhooks page in the reader's language
(webapp.integrations.delivery_text); an exception's own words stay as they are.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from webapp.integrations.models import Webhook, WebhookDelivery
from webapp.lib import outbound

log = logging.getLogger(__name__)

TASK = "workers.webhooks.deliver"
BATCH = 500  # deliveries queued per sweep (a later sweep takes the rest)
Status = WebhookDelivery.Status

# a delivery's error
SWITCHED_OFF = gettext_noop("Stopped: the webhook was switched off.")
REFUSED = gettext_noop("Refused by the outbound policy: %(reason)s")
REDIRECT = gettext_noop("HTTP %(code)s: a redirect, not followed")
HTTP_STATUS = "HTTP %(code)s"  # another answer than 2xx or 3xx: the same in every language
NOT_SENT = "%(type)s: %(reason)s"  # the connection failed: the exception's type and its words


def backoff_seconds() -> float:
    """The first retry's wait (WEBHOOK_BACKOFF_SECONDS, default 10: 10, 20, 40, 80 s)."""
    return settings.WEBHOOK_BACKOFF_SECONDS


def check_url(url: str) -> outbound.Destination:
    """Where `url` may be called, or outbound.OutboundRefused saying why not."""
    return outbound.check(url, settings.OUTBOUND_ALLOWED_NETWORKS)


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def body_of(delivery: WebhookDelivery) -> bytes:
    return json.dumps({**delivery.payload, "delivery": delivery.pk}, sort_keys=True).encode()


def queue_event(project, event: str, key: str, payload: dict) -> list[WebhookDelivery]:
    """One delivery per active webhook of `project` that wants `event`, once per `key` (an object
    that ended is announced once however many times its end is seen); sent after the commit."""
    made, now = [], timezone.now()
    for webhook in Webhook.objects.filter(project=project, active=True):
        if not webhook.wants(event):
            continue
        fields = {"event": event, "payload": payload, "due": now, "sent": now}
        if event == Webhook.Event.TEST:
            delivery = WebhookDelivery.objects.create(webhook=webhook, key=key, **fields)
        else:
            delivery, created = WebhookDelivery.objects.get_or_create(webhook=webhook, key=key, defaults=fields)
            if not created:
                continue
        made.append(delivery)
    if made:
        transaction.on_commit(lambda: _send([d.pk for d in made]))
    return made


def send_test(webhook: Webhook) -> WebhookDelivery:
    payload = {
        "event": Webhook.Event.TEST.value,
        "project": {"id": webhook.project_id, "slug": webhook.project.slug},
        "object": None,
        "status": "test",
        "counts": {},
    }
    now = timezone.now()
    delivery = WebhookDelivery.objects.create(
        webhook=webhook, event=Webhook.Event.TEST, key="test", payload=payload, due=now, sent=now
    )
    transaction.on_commit(lambda: _send([delivery.pk]))
    return delivery


def switch(webhook: Webhook, active: bool) -> int:
    """Switch a webhook on or off. Off stops it at once: its pending deliveries fail, saying so
    (a worker attempting one now finishes that attempt only). Returns how many were stopped."""
    Webhook.objects.filter(pk=webhook.pk).update(active=active)
    webhook.active = active
    if active:
        return 0
    return WebhookDelivery.objects.filter(webhook=webhook, status=Status.PENDING).update(
        status=Status.FAILED, due=None, sent=None, error=SWITCHED_OFF
    )


def claim(delivery_id: int, now=None) -> WebhookDelivery | None:
    """Take a due delivery for one attempt (until the claim expires), or None when it is not
    pending, not due, claimed by another worker, or its webhook is off."""
    now = now or timezone.now()
    lease = now + timedelta(seconds=3 * settings.WEBHOOK_TIMEOUT_SECONDS + 5)  # connect, send, answer
    taken = (
        _attemptable(now)
        .filter(pk=delivery_id, due__lte=now)
        .update(claimed_until=lease, sent=None)  # its message is used up: the sweeper may send another
    )
    return WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id) if taken else None


def attempt(delivery_id: int) -> float | None:
    """Claim the delivery and try it once. Returns the seconds until its next attempt, or None
    when there is none (delivered, failed for good, or nothing to do)."""
    delivery = claim(delivery_id)
    if delivery is None:
        return None
    try:
        destination = check_url(delivery.webhook.url)
    except outbound.HostUnresolved as exc:  # the name server may answer again later
        return _record(delivery, None, str(exc))
    except outbound.OutboundRefused as exc:
        return _record(delivery, None, REFUSED % {"reason": exc}, final=True)
    body = body_of(delivery)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "DecSelfMask-Studio-Webhook/1",
        "X-DSM-Event": delivery.event,
        "X-DSM-Delivery": str(delivery.pk),
        "X-DSM-Signature": sign(delivery.webhook.secret, body),
    }
    try:
        code = outbound.post(destination, body, headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS)
    except OSError as exc:
        return _record(delivery, None, NOT_SENT % {"type": type(exc).__name__, "reason": exc})
    if 300 <= code < 400:
        return _record(delivery, code, REDIRECT % {"code": code})
    return _record(delivery, code, "" if 200 <= code < 300 else HTTP_STATUS % {"code": code})


def send_due(now=None) -> list[int]:
    """The sweeper's pass (webapp.lifecycle.kinds.OUTBOXES): queue every due delivery that no
    worker holds and whose last message is gone (never sent since it fell due, or sent longer
    ago than WORK_REQUEUE_GRACE_SECONDS). Each row is marked sent by a conditional UPDATE, so two
    sweepers never both queue it. Returns the ids queued."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.WORK_REQUEUE_GRACE_SECONDS)
    unsent = Q(sent__isnull=True) | Q(sent__lt=stale)
    due = _attemptable(now).filter(unsent, due__lte=now).order_by("due")
    taken = [
        pk
        for pk in due.values_list("pk", flat=True)[:BATCH]
        if WebhookDelivery.objects.filter(unsent, pk=pk).update(sent=now)
    ]
    if taken:
        log.info("webhooks: %s due deliveries queued (retries or lost messages)", len(taken))
        _send(taken)
    return taken


def _attemptable(now):
    """Pending deliveries of switched-on webhooks that no worker holds now."""
    return WebhookDelivery.objects.filter(status=Status.PENDING, webhook__active=True).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


def _record(delivery: WebhookDelivery, code: int | None, error: str, final: bool = False) -> float | None:
    attempts = delivery.attempts + 1
    delivered = code is not None and 200 <= code < 300
    if delivered:
        status = Status.DELIVERED
    elif final or attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        status = Status.FAILED
    else:
        status = Status.PENDING
    wait = backoff_seconds() * 2 ** (attempts - 1) if status == Status.PENDING else None
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery.pk, status=Status.PENDING).update(
        attempts=attempts,
        response_code=code,
        error=error[:300],
        status=status,
        delivered=now if delivered else None,
        due=now + timedelta(seconds=wait) if wait is not None else None,
        claimed_until=None,
    )
    log.info("webhook delivery %s: attempt %s, answer %s", delivery.pk, attempts, code or error[:80])
    return wait


def _send(ids) -> None:
    from webapp.lifecycle import queue

    try:
        queue.send(TASK, *ids)
    except queue.QueueUnavailable:
        # the rows stay due: the sweeper queues them once the broker is back
        WebhookDelivery.objects.filter(pk__in=ids, status=Status.PENDING).update(sent=None)
