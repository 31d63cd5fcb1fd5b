from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0003_faithfulness"),
    ]

    operations = [
        migrations.AddField(
            model_name="relevanceevaluation",
            name="lacking",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="workers that could not load the model: {worker: {model, reason, releases, at}} (webapp.evaluation.evaluations.release_unloadable)",
            ),
        ),
        migrations.AddField(
            model_name="relevanceevaluation",
            name="releases",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
