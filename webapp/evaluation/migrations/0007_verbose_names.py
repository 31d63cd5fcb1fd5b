# The names people read in the admin (issue 42): verbose names and help texts only, no column;
# one SetNames a model (webapp/db/naming_operation.py says why not AlterField).

from django.db import migrations

from webapp.db.naming_operation import SetNames


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0019_verbose_names"),
        ("evaluation", "0006_faithfulness_passes_help"),
        ("pipeline", "0013_verbose_names"),
        ("auth", "__first__"),
    ]

    operations = [
        SetNames(
            model_name="relevanceevaluation",
            options={"verbose_name": "relevance evaluation", "verbose_name_plural": "relevance evaluations"},
            fields={
                "attempts": {"verbose_name": "attempts"},
                "configs": {"verbose_name": "configurations"},
                "corpus": {"verbose_name": "corpus"},
                "created": {"verbose_name": "created"},
                "created_by": {"verbose_name": "created by"},
                "done": {"verbose_name": "prompts done"},
                "error": {"verbose_name": "error"},
                "faithfulness": {"verbose_name": "faithfulness"},
                "finished": {"verbose_name": "finished"},
                "heartbeat": {"verbose_name": "last sign of life"},
                "lacking": {"verbose_name": "workers lacking the model"},
                "max_pairs": {"verbose_name": "most pairs"},
                "model_version": {"verbose_name": "model version"},
                "pairs": {"verbose_name": "pairs"},
                "pairs_from": {"verbose_name": "pairs from"},
                "phase": {"verbose_name": "phase"},
                "profile": {"verbose_name": "peak profile"},
                "releases": {"verbose_name": "releases"},
                "result": {"verbose_name": "result"},
                "seconds_per_pass": {"verbose_name": "seconds per pass"},
                "seconds_per_prompt": {"verbose_name": "seconds per prompt"},
                "seed": {"verbose_name": "seed"},
                "stage": {"verbose_name": "stage"},
                "stage_done": {"verbose_name": "done in the stage"},
                "stage_seconds": {"verbose_name": "seconds in the stage"},
                "stage_total": {"verbose_name": "total of the stage"},
                "started": {"verbose_name": "started"},
                "status": {"verbose_name": "status"},
                "tasks": {"verbose_name": "tasks"},
                "total": {"verbose_name": "prompts"},
                "worker": {"verbose_name": "worker"},
            },
        ),
    ]
