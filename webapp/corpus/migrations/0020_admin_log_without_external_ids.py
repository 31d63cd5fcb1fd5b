# Django's admin wrote each changed or deleted note and annotation to its change log
# (django_admin_log) under the object's name, which held the note's external id (a site's external
# ids may be record numbers). The names now hold row ids only (Note.__str__); this rewrites the
# names already in the log the same way. Nothing to undo: the old names are not kept anywhere.

from django.db import migrations
from django.db.models import Value
from django.db.models.functions import Concat


def names_without_external_ids(apps, schema_editor):
    LogEntry = apps.get_model("admin", "LogEntry")
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in ("note", "annotation"):
        content_type = ContentType.objects.filter(app_label="corpus", model=model).first()
        if content_type is not None:
            LogEntry.objects.filter(content_type=content_type).update(
                object_repr=Concat(Value(f"{model} "), "object_id")
            )


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0019_verbose_names"),
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(names_without_external_ids, migrations.RunPython.noop)]
