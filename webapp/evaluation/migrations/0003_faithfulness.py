from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0002_work_unit"),
    ]

    operations = [
        migrations.AddField(
            model_name="relevanceevaluation",
            name="pairs_from",
            field=models.CharField(
                choices=[("evidence", "annotated evidence pairs"), ("notes", "drawn notes x the chosen tasks")],
                default="evidence",
                help_text="evidence: the pairs with gold evidence spans; notes: any corpus, gold or not",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="relevanceevaluation",
            name="faithfulness",
            field=models.BooleanField(
                default=False,
                help_text="also measure faithfulness (ml.faithfulness: 12 forward passes per pair and configuration)",
            ),
        ),
        migrations.AddField(
            model_name="relevanceevaluation",
            name="seconds_per_pass",
            field=models.FloatField(blank=True, help_text="faithfulness: seconds per forward pass", null=True),
        ),
    ]
