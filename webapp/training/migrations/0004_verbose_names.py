# The names people read in the admin (issue 42): verbose names and help texts only, no column;
# one SetNames a model (webapp/db/naming_operation.py says why not AlterField).

from django.db import migrations

from webapp.db.naming_operation import SetNames


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0019_verbose_names"),
        ("datasets", "0008_verbose_names"),
        ("pipeline", "0013_verbose_names"),
        ("training", "0003_runmetric_keyset_index"),
        ("auth", "__first__"),
    ]

    operations = [
        SetNames(
            model_name="labeledsplit",
            options={"verbose_name": "labeled split", "verbose_name_plural": "labeled splits"},
            fields={
                "corpus": {"verbose_name": "corpus"},
                "created": {"verbose_name": "created"},
                "created_by": {"verbose_name": "created by"},
                "seed": {"verbose_name": "seed"},
                "tasks": {"verbose_name": "tasks"},
                "test_count": {"verbose_name": "test items"},
                "test_ratio": {"verbose_name": "test share"},
                "train_count": {"verbose_name": "training items"},
            },
        ),
        SetNames(
            model_name="runlog",
            options={"verbose_name": "training run log line", "verbose_name_plural": "training run log lines"},
            fields={
                "created": {"verbose_name": "created"},
                "level": {"verbose_name": "level"},
                "message": {"verbose_name": "message"},
                "run": {"verbose_name": "training run"},
            },
        ),
        SetNames(
            model_name="trainingrun",
            options={"verbose_name": "training run", "verbose_name_plural": "training runs"},
            fields={
                "attempts": {"verbose_name": "attempts"},
                "checkpoint_step": {"verbose_name": "checkpoint step"},
                "code_version": {"verbose_name": "code version"},
                "config": {"verbose_name": "configuration"},
                "created": {"verbose_name": "created"},
                "created_by": {"verbose_name": "created by"},
                "dataset": {"verbose_name": "dataset"},
                "epoch": {"verbose_name": "epoch"},
                "error": {"verbose_name": "error"},
                "eta_s": {"verbose_name": "time left (s)"},
                "finished": {"verbose_name": "finished"},
                "heartbeat": {"verbose_name": "last sign of life"},
                "held_out_macro_f1": {"verbose_name": "held-out tasks' Macro F1"},
                "kind": {"verbose_name": "kind"},
                "loss": {"verbose_name": "loss"},
                "lr": {"verbose_name": "learning rate"},
                "macro_f1": {"verbose_name": "Macro F1"},
                "macro_f1_high": {"verbose_name": "Macro F1, 95% CI high"},
                "macro_f1_low": {"verbose_name": "Macro F1, 95% CI low"},
                "model_version": {"verbose_name": "model version"},
                "name": {"verbose_name": "name"},
                "output_dir": {"verbose_name": "output folder"},
                "phase": {"verbose_name": "phase"},
                "preset": {"verbose_name": "preset"},
                "produced_model": {"verbose_name": "produced model"},
                "provenance": {"verbose_name": "provenance"},
                "results": {"verbose_name": "results"},
                "seed": {"verbose_name": "seed"},
                "split": {"verbose_name": "labeled split"},
                "started": {"verbose_name": "started"},
                "status": {"verbose_name": "status"},
                "step": {"verbose_name": "step"},
                "tokens_per_s": {"verbose_name": "tokens per second"},
                "total_steps": {"verbose_name": "total steps"},
                "worker": {"verbose_name": "worker"},
            },
        ),
    ]
