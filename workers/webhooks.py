"""Deliver one webhook event (webapp.api.webhooks.attempt), retrying with back-off while the
receiver fails; the delivery row records every attempt."""

from celery import shared_task


@shared_task(name="workers.webhooks.deliver", bind=True, max_retries=None)
def deliver(self, delivery_id: int) -> None:
    from webapp.api import webhooks

    wait = webhooks.attempt(delivery_id)
    if wait is not None:
        raise self.retry(countdown=wait)
