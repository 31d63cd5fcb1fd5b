"""Corpus.deidentified and .deidentified_from, ImportJob.deidentify (issue 39).

Adding them makes Django rebuild corpus_corpus on SQLite, which fails while the counters'
triggers on corpus_note name it: they are dropped first and created again after."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.corpus.migrations._sqlite import COUNTER_TRIGGERS, DROP_COUNTER_TRIGGERS, SQLiteOnly


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0016_corpus_counters_sqlite"),
    ]

    operations = [
        SQLiteOnly(DROP_COUNTER_TRIGGERS, COUNTER_TRIGGERS),
        migrations.AddField(
            model_name="corpus",
            name="deidentified",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="corpus",
            name="deidentified_from",
            field=models.ForeignKey(
                blank=True,
                help_text="The corpus this one was de-identified from",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="deidentified_versions",
                to="corpus.corpus",
            ),
        ),
        migrations.AddField(
            model_name="importjob",
            name="deidentify",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="de-identify on the way in: the original text is never stored",
            ),
        ),
        SQLiteOnly(COUNTER_TRIGGERS, DROP_COUNTER_TRIGGERS),
    ]
