"""Relevance configurations: a job stores its RelevanceConfig, a map the key of the one that made it.

Every job and map that exists was computed the way every job was before: explain "next",
normalise "abs", truncate "right", the worker's preferred dtype ("auto", ModelVersion records
none), so each gets the default configuration of its method and template. The maps' unique key
becomes (note, task, model version, config key): the key covers the method and the template.
Going back is possible while no (note, task, model version, method, template) has maps of two
configurations.
"""

from django.db import migrations, models

from ml.relevance import RelevanceConfig, default_config_key


def record_todays_config(apps, schema_editor):
    RelevanceJob = apps.get_model("pipeline", "RelevanceJob")
    RelevanceMap = apps.get_model("pipeline", "RelevanceMap")
    defaults = RelevanceConfig().to_dict()
    for job in RelevanceJob.objects.all().iterator():
        config = {**defaults, "method": job.method, "template": job.template}
        RelevanceJob.objects.filter(pk=job.pk).update(
            explain=config["explain"], config=config, config_key=default_config_key(job.method, job.template)
        )
    combos = RelevanceMap.objects.values_list("method", "template").distinct().order_by()
    for method, template in list(combos):
        RelevanceMap.objects.filter(method=method, template=template).update(
            config_key=default_config_key(method, template)
        )


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0003_peakprofile_strict_trim")]
    operations = [
        migrations.AddField(
            model_name="relevancejob",
            name="explain",
            field=models.CharField(
                choices=[
                    ("next", "Next token after the middle of s_T (reference code)"),
                    ("max", "Top logit before the middle of s_T"),
                    ("target", "The middle token of s_T"),
                    ("span", "Every token of s_T, summed"),
                    ("contrastive", "s_T minus a neutral description"),
                ],
                default="next",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="relevancejob",
            name="config",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The whole ml.relevance.RelevanceConfig (to_dict); method, template "
                "and explain are copied into their columns",
            ),
        ),
        migrations.AddField(
            model_name="relevancejob",
            name="config_key",
            field=models.CharField(blank=True, db_index=True, max_length=64, help_text="RelevanceConfig.key"),
        ),
        migrations.AlterField(
            model_name="relevancejob",
            name="template",
            field=models.CharField(default="en", help_text="'en', 'it', 'es' or a custom template", max_length=500),
        ),
        migrations.AddField(
            model_name="relevancemap",
            name="config_key",
            field=models.CharField(
                default="", max_length=64, help_text="RelevanceConfig.key of the configuration that made it"
            ),
            preserve_default=False,
        ),
        migrations.RunPython(record_todays_config, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="relevancemap", name="pipeline_relevancemap_unique"),
        migrations.AddConstraint(
            model_name="relevancemap",
            constraint=models.UniqueConstraint(
                fields=("note", "task", "model_version", "config_key"), name="pipeline_relevancemap_unique_config"
            ),
        ),
        migrations.RemoveIndex(model_name="relevancemap", name="pipeline_map_lookup"),
        migrations.AddIndex(
            model_name="relevancemap",
            index=models.Index(
                fields=["model_version", "config_key", "task", "note"], name="pipeline_map_config_lookup"
            ),
        ),
    ]
