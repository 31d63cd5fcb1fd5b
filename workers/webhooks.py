"""Deliver one webhook event: one attempt (webapp.integrations.webhooks.attempt) on the `webhooks` queue.
No retry is held in the broker: a failed attempt leaves the row due later, and the recovery
sweeper queues it again then (webapp.integrations.webhooks, the outbox)."""

from celery import shared_task


@shared_task(name="workers.webhooks.deliver")
def deliver(delivery_id: int) -> None:
    from webapp.integrations import webhooks

    webhooks.attempt(delivery_id)
