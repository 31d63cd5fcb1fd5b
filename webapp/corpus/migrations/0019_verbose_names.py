# The names people read in the admin (issue 42): verbose names and help texts only, no column;
# one SetNames a model (webapp/db/naming_operation.py says why not AlterField).

from django.db import migrations

from webapp.db.naming_operation import SetNames


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0018_import_deid_counts"),
        ("projects", "0004_retention"),
        ("auth", "__first__"),
    ]

    operations = [
        SetNames(
            model_name="annotation",
            options={"verbose_name": "annotation", "verbose_name_plural": "annotations"},
            fields={
                "annotator": {"verbose_name": "annotator"},
                "annotator_name": {"verbose_name": "annotator name"},
                "created": {"verbose_name": "created"},
                "evidence": {"verbose_name": "evidence"},
                "label": {"verbose_name": "label"},
                "note": {"verbose_name": "note"},
                "task": {"verbose_name": "task"},
            },
        ),
        SetNames(
            model_name="corpus",
            options={"verbose_name": "corpus"},
            fields={
                "annotation_count": {"verbose_name": "annotations"},
                "created": {"verbose_name": "created"},
                "deidentified": {"verbose_name": "de-identified"},
                "deidentified_from": {"verbose_name": "de-identified from"},
                "description": {"verbose_name": "description"},
                "language": {"verbose_name": "language"},
                "name": {"verbose_name": "name"},
                "note_count": {"verbose_name": "notes"},
                "project": {"verbose_name": "project"},
                "source": {"verbose_name": "source"},
            },
        ),
        SetNames(
            model_name="importjob",
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
        SetNames(
            model_name="note",
            options={"verbose_name": "clinical note", "verbose_name_plural": "clinical notes"},
            fields={
                "content_hash": {"verbose_name": "content hash"},
                "corpus": {"verbose_name": "corpus"},
                "created": {"verbose_name": "created"},
                "external_id": {"verbose_name": "external id"},
                "metadata": {"verbose_name": "metadata"},
                "text": {"verbose_name": "text"},
            },
        ),
        SetNames(
            model_name="task",
            options={"verbose_name": "task", "verbose_name_plural": "tasks"},
            fields={
                "aliases": {"verbose_name": "aliases"},
                "created": {"verbose_name": "created"},
                "decision_count": {"verbose_name": "review decisions"},
                "description": {"verbose_name": "task description"},
                "group": {"verbose_name": "group"},
                "guideline": {"verbose_name": "guideline"},
                "held_out": {"verbose_name": "held out"},
                "options": {"verbose_name": "options"},
                "origin": {"verbose_name": "origin"},
                "project": {"verbose_name": "project"},
                "retired": {"verbose_name": "retired"},
                "slug": {"verbose_name": "slug"},
            },
        ),
    ]
