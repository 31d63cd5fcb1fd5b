"""Retention's periodic round (webapp.erasure.retention.apply), sent by Celery beat: it requests
erasures (long work of their own kind) and removes expired exports' files; idempotent."""

from celery import shared_task


@shared_task(name="workers.retention.apply_retention")
def apply_retention() -> None:
    from webapp.erasure import retention

    retention.apply()
