"""The webhooks leave the API app for the integrations (issue 40): the models of api 0001/0002 are
taken over as they stand. State only: the tables keep their names (api_webhook,
api_webhookdelivery; Meta.db_table), so no row moves and nothing is locked (api 0003 drops them
from the API app's state)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("api", "0002_outbox"),
        ("projects", "0004_retention"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Webhook",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("url", models.URLField(max_length=500)),
                        (
                            "secret",
                            models.CharField(
                                help_text="Signs each body: X-DSM-Signature: sha256=<HMAC hex>", max_length=100
                            ),
                        ),
                        (
                            "events",
                            models.JSONField(default=list, help_text="the Event values delivered; empty: every event"),
                        ),
                        ("active", models.BooleanField(default=True)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="webhooks",
                                to="projects.project",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "api_webhook",
                        "ordering": ["-created", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="WebhookDelivery",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("event", models.CharField(max_length=20)),
                        ("key", models.CharField(max_length=120)),
                        ("payload", models.JSONField()),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("delivered", "Delivered"),
                                    ("failed", "Failed after every retry"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("attempts", models.PositiveSmallIntegerField(default=0)),
                        ("response_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("error", models.CharField(blank=True, max_length=300)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("delivered", models.DateTimeField(blank=True, null=True)),
                        (
                            "due",
                            models.DateTimeField(
                                blank=True, help_text="when the next attempt may run; empty once ended", null=True
                            ),
                        ),
                        (
                            "sent",
                            models.DateTimeField(blank=True, help_text="when its message was last queued", null=True),
                        ),
                        (
                            "claimed_until",
                            models.DateTimeField(blank=True, help_text="a worker attempts it until then", null=True),
                        ),
                        (
                            "webhook",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="deliveries",
                                to="integrations.webhook",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "api_webhookdelivery",
                        "ordering": ["-created", "-id"],
                        "indexes": [
                            models.Index(
                                condition=models.Q(("status", "pending")),
                                fields=["due"],
                                name="api_delivery_pending_due",
                            )
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("event", "test"), _negated=True),
                                fields=("webhook", "key"),
                                name="api_delivery_once_per_event",
                            )
                        ],
                    },
                ),
            ],
        ),
    ]
