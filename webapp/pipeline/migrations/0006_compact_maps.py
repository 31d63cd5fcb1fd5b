"""Compact relevance maps: a note's token offsets once (NoteTokens, shared by its maps), the
configuration once (MapConfiguration, a small integer on each map), scores alone in `data`,
and no index a query does not need. Existing maps are moved in batches of id order."""

from django.db import migrations, models
from django.db.models import deletion

from ml.codec import decode_arrays, decode_map, encode_map, encode_offsets, encode_scores, offsets_digest

BATCH = 2_000


def _batches(maps):
    last = 0
    while True:
        batch = list(maps.filter(pk__gt=last).order_by("pk")[:BATCH])
        if not batch:
            return
        yield batch
        last = batch[-1].pk


def split_maps(apps, schema_editor):
    """Each map's old blob -> its note's offsets row (made once per distinct offsets) and its scores."""
    Map, Config, Tokens = (apps.get_model("pipeline", n) for n in ("RelevanceMap", "MapConfiguration", "NoteTokens"))
    configs = {}
    for batch in _batches(Map.objects.all()):
        arrays, blobs = {}, {}
        for m in batch:
            arrays[m.pk] = decode_map(m.data)
            blob = encode_offsets(arrays[m.pk][0])
            blobs[m.pk] = (m.note_id, offsets_digest(blob), blob)
        Tokens.objects.bulk_create(
            [Tokens(note_id=n, digest=d, offsets=b) for n, d, b in {v[:2]: v for v in blobs.values()}.values()],
            ignore_conflicts=True,
        )
        rows = Tokens.objects.filter(note_id__in={m.note_id for m in batch}).values_list("pk", "note_id", "digest")
        token_ids = {(n, bytes(d)): pk for pk, n, d in rows}
        for m in batch:
            key = (m.method, m.template, m.config_key)
            if key not in configs:
                configs[key] = Config.objects.get_or_create(method=key[0], template=key[1], config_key=key[2])[0].pk
            m.config_id = configs[key]
            m.tokens_id = token_ids[blobs[m.pk][:2]]
            m.data = encode_scores(arrays[m.pk][1])
        Map.objects.bulk_update(batch, ["config", "tokens", "data"])


def join_maps(apps, schema_editor):
    """Back to one blob a map, with its method, template and key as columns."""
    Map = apps.get_model("pipeline", "RelevanceMap")
    for batch in _batches(Map.objects.select_related("config", "tokens")):
        for m in batch:
            m.method, m.template, m.config_key = m.config.method, m.config.template, m.config.config_key
            m.data = encode_map(*decode_arrays(m.tokens.offsets, m.data))
        Map.objects.bulk_update(batch, ["method", "template", "config_key", "data"])


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0001_initial"),
        ("pipeline", "0005_lifecycle"),
    ]

    operations = [
        migrations.CreateModel(
            name="MapConfiguration",
            fields=[
                ("id", models.AutoField(primary_key=True, serialize=False)),
                ("method", models.CharField(max_length=20)),
                ("template", models.CharField(max_length=500)),
                ("config_key", models.CharField(help_text="RelevanceConfig.key", max_length=64)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("config_key", "method", "template"), name="pipeline_mapconfig_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="NoteTokens",
            fields=[
                ("id", models.AutoField(primary_key=True, serialize=False)),
                ("digest", models.BinaryField(max_length=16)),
                ("offsets", models.BinaryField()),
                (
                    "note",
                    models.ForeignKey(db_index=False, on_delete=deletion.CASCADE, related_name="+", to="corpus.note"),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("note", "digest"), name="pipeline_notetokens_unique")],
            },
        ),
        migrations.AddField(
            model_name="relevancemap",
            name="config",
            field=models.ForeignKey(
                null=True,
                db_index=False,
                on_delete=deletion.PROTECT,
                related_name="maps",
                to="pipeline.mapconfiguration",
            ),
        ),
        migrations.AddField(
            model_name="relevancemap",
            name="tokens",
            field=models.ForeignKey(
                null=True, on_delete=deletion.CASCADE, related_name="maps", to="pipeline.notetokens"
            ),
        ),
        migrations.RemoveConstraint(model_name="relevancemap", name="pipeline_relevancemap_unique_config"),
        migrations.RemoveIndex(model_name="relevancemap", name="pipeline_map_config_lookup"),
        migrations.RemoveIndex(model_name="relevancemap", name="pipeline_map_job"),
        # the old key names config_key: dropped before the move, made again after a move back
        migrations.RunPython(split_maps, join_maps, elidable=False),
        # defaults only so that migrating back can add the columns to existing rows (then filled)
        migrations.AlterField(
            model_name="relevancemap", name="method", field=models.CharField(max_length=20, default="")
        ),
        migrations.AlterField(
            model_name="relevancemap", name="template", field=models.CharField(max_length=500, default="")
        ),
        migrations.AlterField(
            model_name="relevancemap",
            name="config_key",
            field=models.CharField(
                max_length=64, default="", help_text="RelevanceConfig.key of the configuration that made it"
            ),
        ),
        migrations.RemoveField(model_name="relevancemap", name="method"),
        migrations.RemoveField(model_name="relevancemap", name="template"),
        migrations.RemoveField(model_name="relevancemap", name="config_key"),
        migrations.RemoveField(model_name="relevancemap", name="created"),
        migrations.AlterField(
            model_name="relevancemap",
            name="config",
            field=models.ForeignKey(
                db_index=False, on_delete=deletion.PROTECT, related_name="maps", to="pipeline.mapconfiguration"
            ),
        ),
        migrations.AlterField(
            model_name="relevancemap",
            name="tokens",
            field=models.ForeignKey(on_delete=deletion.CASCADE, related_name="maps", to="pipeline.notetokens"),
        ),
        migrations.AlterField(
            model_name="relevancemap",
            name="data",
            field=models.BinaryField(help_text="float16 scores (ml.codec.encode_scores)"),
        ),
        migrations.AlterField(
            model_name="relevancemap",
            name="note",
            field=models.ForeignKey(
                db_index=False, on_delete=deletion.CASCADE, related_name="relevance_maps", to="corpus.note"
            ),
        ),
        migrations.AlterField(
            model_name="relevancemap",
            name="task",
            field=models.ForeignKey(
                db_index=False, on_delete=deletion.PROTECT, related_name="relevance_maps", to="corpus.task"
            ),
        ),
        migrations.AlterField(
            model_name="relevancemap",
            name="model_version",
            field=models.ForeignKey(
                db_index=False,
                on_delete=deletion.PROTECT,
                related_name="relevance_maps",
                to="pipeline.modelversion",
            ),
        ),
        migrations.AddConstraint(
            model_name="relevancemap",
            constraint=models.UniqueConstraint(
                fields=("note", "task", "model_version", "config"), name="pipeline_relevancemap_unique_config"
            ),
        ),
    ]
