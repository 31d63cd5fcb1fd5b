"""Project webhooks. A webhook is a project's URL and shared secret; every delivery of an event
to it is a row of WebhookDelivery (the log on the project's webhooks page). Payloads carry ids,
statuses and counts, never note text (webapp.integrations.events).

The tables kept their names from when these models lived in the API app (api_webhook,
api_webhookdelivery): migration integrations 0001 took them over without touching the database.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from webapp.lifecycle import kinds
from webapp.projects.scoping import ProjectScopedQuerySet


class Webhook(models.Model):
    # Every kind of long work's event (webapp.lifecycle.kinds: each kind's `event`), then a review
    # round's and a test delivery's: Event.TRAINING_RUN == "training_run".
    Event = models.TextChoices(
        "Event",
        [
            *((event.value.upper(), (event.value, _(event.label))) for event in kinds.events()),
            ("REVIEW_ROUND", ("review_round", _("Review round complete"))),
            ("TEST", ("test", _("Test delivery"))),
        ],
    )

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100, help_text=_("Signs each body: X-DSM-Signature: sha256=<HMAC hex>"))
    events = models.JSONField(default=list, help_text=_("the Event values delivered; empty: every event"))
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)

    project_paths = ("project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        db_table = "api_webhook"
        ordering = ["-created", "-id"]

    def __str__(self):
        return self.url

    def wants(self, event: str) -> bool:
        return event == self.Event.TEST or not self.events or event in self.events


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to one webhook; attempts and the last answer are kept.

    The row is the outbox (webapp.integrations.webhooks): a pending delivery is `due` at a time; a worker
    takes it for one attempt by setting `claimed_until` (so two never send it at once), and
    `sent` says when a message for it was last put on the queue, so the recovery sweeper can
    send again one whose message was lost (a broker restart, a killed worker)."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        DELIVERED = "delivered", _("Delivered")
        FAILED = "failed", _("Failed after every retry")

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=20)
    # (object type, id, status) of what happened: one delivery per webhook however often it is seen
    key = models.CharField(max_length=120)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    delivered = models.DateTimeField(null=True, blank=True)
    due = models.DateTimeField(null=True, blank=True, help_text=_("when the next attempt may run; empty once ended"))
    sent = models.DateTimeField(null=True, blank=True, help_text=_("when its message was last queued"))
    claimed_until = models.DateTimeField(null=True, blank=True, help_text=_("a worker attempts it until then"))

    project_paths = ("webhook__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        db_table = "api_webhookdelivery"
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["webhook", "key"], condition=~Q(event="test"), name="api_delivery_once_per_event"
            )
        ]
        indexes = [models.Index(fields=["due"], condition=Q(status="pending"), name="api_delivery_pending_due")]
