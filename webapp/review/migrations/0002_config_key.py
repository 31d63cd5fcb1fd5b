"""Review rows name the relevance configuration of their maps (RelevanceConfig.key).

Rows stored before configurations existed were made on maps of the default configuration of
their method and template (pipeline 0004 gave those maps that key): they get it too."""

from django.db import migrations, models

from ml.relevance import default_config_key


def backfill(apps, schema_editor):
    for name in ("PeakDecision", "ValidationSet", "MapSample"):
        model = apps.get_model("review", name)
        pairs = model.objects.filter(config_key="").values_list("method", "template").distinct()
        for method, template in list(pairs):
            model.objects.filter(config_key="", method=method, template=template).update(
                config_key=default_config_key(method, template)
            )


class Migration(migrations.Migration):
    dependencies = [
        ("pipeline", "0004_relevance_config"),
        ("review", "0001_initial"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="mapsample", name="review_mapsample_unique"),
        migrations.RemoveConstraint(model_name="peakdecision", name="review_peakdecision_one_per_reviewer"),
        migrations.AddField(
            model_name="mapsample",
            name="config_key",
            field=models.CharField(default="", help_text="RelevanceConfig.key of the maps sampled", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="validationset",
            name="config_key",
            field=models.CharField(default="", help_text="RelevanceConfig.key of the maps judged", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="peakdecision",
            name="config_key",
            field=models.CharField(
                default="", help_text="RelevanceConfig.key of the map whose peak this is", max_length=64
            ),
            preserve_default=False,
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="mapsample",
            constraint=models.UniqueConstraint(
                fields=("corpus", "model_version", "method", "template", "config_key", "seed", "size"),
                name="review_mapsample_unique",
            ),
        ),
        migrations.AddConstraint(
            model_name="peakdecision",
            constraint=models.UniqueConstraint(
                fields=(
                    "note",
                    "task",
                    "model_version",
                    "method",
                    "template",
                    "config_key",
                    "start",
                    "end",
                    "reviewer",
                ),
                name="review_peakdecision_one_per_reviewer",
            ),
        ),
    ]
