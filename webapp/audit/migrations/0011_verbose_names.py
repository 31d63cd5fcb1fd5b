# The names people read in the admin (issue 42): verbose names and help texts only, no column;
# one SetNames a model (webapp/db/naming_operation.py says why not AlterField).

from django.db import migrations

from webapp.db.naming_operation import SetNames


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0010_import_maps_action"),
        ("projects", "0004_retention"),
        ("auth", "__first__"),
    ]

    operations = [
        SetNames(
            model_name="auditevent",
            options={"verbose_name": "audit log entry", "verbose_name_plural": "audit log entries"},
            fields={
                "action": {"verbose_name": "action"},
                "actor": {"verbose_name": "actor"},
                "actor_name": {"verbose_name": "actor name"},
                "created": {"verbose_name": "created"},
                "details": {"verbose_name": "details"},
                "ip": {"verbose_name": "IP address"},
                "object_id": {"verbose_name": "object id"},
                "object_type": {"verbose_name": "object type"},
                "project": {"verbose_name": "project"},
            },
        ),
    ]
