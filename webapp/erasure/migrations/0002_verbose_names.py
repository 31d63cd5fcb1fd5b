# The names people read in the admin (issue 42): verbose names and help texts only, no column;
# one SetNames a model (webapp/db/naming_operation.py says why not AlterField).

from django.db import migrations

from webapp.db.naming_operation import SetNames


class Migration(migrations.Migration):
    dependencies = [
        ("erasure", "0001_initial"),
    ]

    operations = [
        SetNames(
            model_name="erasurerequest",
            fields={
                "attempts": {"verbose_name": "attempts"},
                "error": {"verbose_name": "error"},
                "finished": {"verbose_name": "finished"},
                "heartbeat": {"verbose_name": "last sign of life"},
                "started": {"verbose_name": "started"},
                "status": {"verbose_name": "status"},
                "worker": {"verbose_name": "worker"},
            },
        ),
    ]
