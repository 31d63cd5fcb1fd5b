"""The task row's counter of review decisions; review migration 0004 adds the triggers that keep it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("corpus", "0006_note_external_id_prefix")]
    operations = [
        migrations.AddField(
            model_name="task",
            name="decision_count",
            field=models.BigIntegerField(default=0, db_default=0, editable=False),
        ),
    ]
