from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("datasets", "0005_retention"),
    ]

    operations = [
        migrations.AddField(
            model_name="datasetexport",
            name="residual",
            field=models.JSONField(
                blank=True,
                help_text="the residual scan of the rows written: findings per identifier type, never values (webapp.deid_ops.scanning.ExportScan)",
                null=True,
            ),
        ),
    ]
