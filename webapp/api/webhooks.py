"""Webhook deliveries: what is sent, how it is signed, one attempt, and the back-off between
attempts. The Celery task (workers.webhooks) only calls `attempt` and retries when told to.

Body: JSON, `{"event", "delivery", "project": {"id", "slug"}, "object": {"type", "id"}, "status",
"counts"}`: ids, statuses and counts only, never note text or error messages (which may quote a
file). Headers: `X-DSM-Event`, `X-DSM-Delivery` (the delivery's id: the same on every retry, so a
receiver can drop duplicates) and `X-DSM-Signature: sha256=<hex HMAC-SHA256 of the body with the
webhook's secret>`. A 2xx answer delivers it; anything else (another status, a refused connection,
a timeout) is tried again after BACKOFF_SECONDS x 2^(attempt-1), MAX_ATTEMPTS attempts in all,
then the delivery is marked failed. Each attempt's outcome is kept on the row (the page's log).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import urllib.error
import urllib.request

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webapp.api.models import Webhook, WebhookDelivery

log = logging.getLogger(__name__)

TASK = "workers.webhooks.deliver"
MAX_ATTEMPTS = 5
TIMEOUT_SECONDS = 10


def backoff_seconds() -> float:
    """The first retry's wait (settings.WEBHOOK_BACKOFF_SECONDS, default 10: 10, 20, 40, 80 s)."""
    return float(getattr(settings, "WEBHOOK_BACKOFF_SECONDS", 10))


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def body_of(delivery: WebhookDelivery) -> bytes:
    return json.dumps({**delivery.payload, "delivery": delivery.pk}, sort_keys=True).encode()


def queue_event(project, event: str, key: str, payload: dict) -> list[WebhookDelivery]:
    """One delivery per active webhook of `project` that wants `event`, once per `key` (an object
    that ended is announced once however many times its end is seen); sent after the commit."""
    made = []
    for webhook in Webhook.objects.filter(project=project, active=True):
        if not webhook.wants(event):
            continue
        if event == Webhook.Event.TEST:
            delivery = WebhookDelivery.objects.create(webhook=webhook, event=event, key=key, payload=payload)
        else:
            delivery, created = WebhookDelivery.objects.get_or_create(
                webhook=webhook, key=key, defaults={"event": event, "payload": payload}
            )
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
    delivery = WebhookDelivery.objects.create(webhook=webhook, event=Webhook.Event.TEST, key="test", payload=payload)
    transaction.on_commit(lambda: _send([delivery.pk]))
    return delivery


def attempt(delivery_id: int) -> float | None:
    """Try to deliver once. Returns the seconds to wait before the next attempt, or None when
    there is none (delivered, failed for good, or nothing to do)."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return None
    body = body_of(delivery)
    request = urllib.request.Request(
        delivery.webhook.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "DecSelfMask-Studio-Webhook/1",
            "X-DSM-Event": delivery.event,
            "X-DSM-Delivery": str(delivery.pk),
            "X-DSM-Signature": sign(delivery.webhook.secret, body),
        },
    )
    code, error = None, ""
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            code = response.status
    except urllib.error.HTTPError as exc:
        code, error = exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"[:300]
    attempts = delivery.attempts + 1
    delivered = code is not None and 200 <= code < 300
    if delivered:
        status = WebhookDelivery.Status.DELIVERED
    elif attempts >= MAX_ATTEMPTS:
        status = WebhookDelivery.Status.FAILED
    else:
        status = WebhookDelivery.Status.PENDING
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=attempts,
        response_code=code,
        error=error,
        status=status,
        delivered=timezone.now() if delivered else None,
    )
    log.info("webhook delivery %s: attempt %s, answer %s", delivery.pk, attempts, code or error)
    if status != WebhookDelivery.Status.PENDING:
        return None
    return backoff_seconds() * 2 ** (attempts - 1)


def _send(ids) -> None:
    from webapp.lifecycle import queue

    try:
        queue.send(TASK, *ids)
    except queue.QueueUnavailable as exc:
        WebhookDelivery.objects.filter(pk__in=ids).update(error=str(exc)[:300])
