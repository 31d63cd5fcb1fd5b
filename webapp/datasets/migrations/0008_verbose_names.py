# The names people read in the admin (issue 42): verbose names and help texts only, no column;
# one SetNames a model (webapp/db/naming_operation.py says why not AlterField).

from django.db import migrations

from webapp.db.naming_operation import SetNames


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0019_verbose_names"),
        ("datasets", "0007_export_formats_table"),
        ("pipeline", "0012_map_import_jobs"),
        ("auth", "__first__"),
    ]

    operations = [
        SetNames(
            model_name="datasetexport",
            options={"verbose_name": "dataset export", "verbose_name_plural": "dataset exports"},
            fields={
                "attempts": {"verbose_name": "attempts"},
                "created": {"verbose_name": "created"},
                "created_by": {"verbose_name": "created by"},
                "dataset": {"verbose_name": "dataset"},
                "error": {"verbose_name": "error"},
                "expired": {"verbose_name": "expired"},
                "finished": {"verbose_name": "finished"},
                "format": {"verbose_name": "format"},
                "heartbeat": {"verbose_name": "last sign of life"},
                "path": {"verbose_name": "path"},
                "residual": {"verbose_name": "residual identifiers"},
                "rows": {"verbose_name": "rows"},
                "size_bytes": {"verbose_name": "size (bytes)"},
                "started": {"verbose_name": "started"},
                "status": {"verbose_name": "status"},
                "worker": {"verbose_name": "worker"},
            },
        ),
        SetNames(
            model_name="datasetversion",
            options={"verbose_name": "masked dataset", "verbose_name_plural": "masked datasets"},
            fields={
                "attempts": {"verbose_name": "attempts"},
                "corpus": {"verbose_name": "corpus"},
                "created": {"verbose_name": "created"},
                "created_by": {"verbose_name": "created by"},
                "error": {"verbose_name": "error"},
                "filters": {"verbose_name": "filters"},
                "finished": {"verbose_name": "finished"},
                "heartbeat": {"verbose_name": "last sign of life"},
                "jobs": {"verbose_name": "relevance jobs"},
                "maps_done": {"verbose_name": "maps done"},
                "maps_total": {"verbose_name": "maps selected"},
                "mask_token": {"verbose_name": "mask token"},
                "method": {"verbose_name": "method"},
                "mode": {"verbose_name": "mode"},
                "model_version": {"verbose_name": "model version"},
                "name": {"verbose_name": "name"},
                "profile": {"verbose_name": "peak profile"},
                "seed": {"verbose_name": "seed"},
                "started": {"verbose_name": "started"},
                "stats": {"verbose_name": "statistics"},
                "status": {"verbose_name": "status"},
                "template": {"verbose_name": "prompt template"},
                "version": {"verbose_name": "version"},
                "worker": {"verbose_name": "worker"},
            },
        ),
    ]
