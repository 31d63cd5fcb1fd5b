"""The webhooks leave the API app for the integrations (integrations 0001 takes the models over
with their tables): state only, nothing in the database changes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0002_outbox"),
        ("integrations", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(model_name="webhookdelivery", name="webhook"),
                migrations.DeleteModel(name="Webhook"),
                migrations.DeleteModel(name="WebhookDelivery"),
            ],
        ),
    ]
