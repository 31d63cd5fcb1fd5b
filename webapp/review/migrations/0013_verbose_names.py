# The names people read in the admin (issue 42): verbose names and help texts only, no column;
# one SetNames a model (webapp/db/naming_operation.py says why not AlterField).

from django.db import migrations

from webapp.db.naming_operation import SetNames


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0019_verbose_names"),
        ("pipeline", "0013_verbose_names"),
        ("review", "0012_round_order"),
        ("auth", "__first__"),
    ]

    operations = [
        SetNames(
            model_name="mapsample",
            options={"verbose_name": "map sample", "verbose_name_plural": "map samples"},
            fields={
                "config_key": {"verbose_name": "configuration key"},
                "corpus": {"verbose_name": "corpus"},
                "created": {"verbose_name": "created"},
                "map_ids": {"verbose_name": "map ids"},
                "method": {"verbose_name": "method"},
                "model_version": {"verbose_name": "model version"},
                "population": {"verbose_name": "population"},
                "seed": {"verbose_name": "seed"},
                "size": {"verbose_name": "size"},
                "template": {"verbose_name": "prompt template"},
            },
        ),
        SetNames(
            model_name="peakdecision",
            options={"verbose_name": "peak decision", "verbose_name_plural": "peak decisions"},
            fields={
                "active_ms": {"verbose_name": "active time (ms)"},
                "adjusted_end": {"verbose_name": "adjusted end"},
                "adjusted_start": {"verbose_name": "adjusted start"},
                "batch": {"verbose_name": "batch"},
                "comment": {"verbose_name": "comment"},
                "config_key": {"verbose_name": "configuration key"},
                "created": {"verbose_name": "created"},
                "decision": {"verbose_name": "decision"},
                "end": {"verbose_name": "end"},
                "guideline_version": {"verbose_name": "guideline version"},
                "method": {"verbose_name": "method"},
                "model_version": {"verbose_name": "model version"},
                "note": {"verbose_name": "note"},
                "params": {"verbose_name": "peak parameters"},
                "previous": {"verbose_name": "previous state"},
                "profile": {"verbose_name": "peak profile"},
                "reviewer": {"verbose_name": "reviewer"},
                "start": {"verbose_name": "start"},
                "task": {"verbose_name": "task"},
                "template": {"verbose_name": "prompt template"},
                "updated": {"verbose_name": "updated"},
                "version": {"verbose_name": "version"},
            },
        ),
        SetNames(
            model_name="reportsnapshot",
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
            model_name="validationjudgement",
            options={"verbose_name": "validation judgement", "verbose_name_plural": "validation judgements"},
            fields={
                "created": {"verbose_name": "created"},
                "note": {"verbose_name": "note"},
                "reasonable": {"verbose_name": "reasonable"},
                "reviewer": {"verbose_name": "reviewer"},
                "setting": {"verbose_name": "setting"},
                "task": {"verbose_name": "task"},
                "updated": {"verbose_name": "updated"},
                "validation_set": {"verbose_name": "validation set"},
            },
        ),
        SetNames(
            model_name="validationset",
            options={"verbose_name": "validation set", "verbose_name_plural": "validation sets"},
            fields={
                "config_key": {"verbose_name": "configuration key"},
                "corpus": {"verbose_name": "corpus"},
                "created": {"verbose_name": "created"},
                "created_by": {"verbose_name": "created by"},
                "grid": {"verbose_name": "candidate settings"},
                "items": {"verbose_name": "items"},
                "method": {"verbose_name": "method"},
                "model_version": {"verbose_name": "model version"},
                "name": {"verbose_name": "name"},
                "notes_available": {"verbose_name": "notes available"},
                "retired": {"verbose_name": "retired"},
                "retired_by": {"verbose_name": "retired by"},
                "seed": {"verbose_name": "seed"},
                "size": {"verbose_name": "notes asked for"},
                "template": {"verbose_name": "prompt template"},
            },
        ),
    ]
