"""The corpus counters (notes, annotations) on SQLite too, the embedded default: until now only
PostgreSQL's triggers (0005_corpus_counters) kept them, so on SQLite they stayed 0 and the API
answered `note_count: 0` for a corpus of 48 notes.

Row-level triggers (SQLite has no statement-level ones): each note or annotation inserted or
deleted, by the ORM, bulk_create or a cascade, moves its corpus's count by one. A note deleted
while its annotations still exist (foreign keys are checked at commit on SQLite, so a delete may
come before its annotations' deletes) takes their count with it; an annotation deleted after its
note finds no corpus and changes nothing; so either order counts right. A note never moves to
another corpus. The last statement counts what exists now.

A later migration that makes Django rebuild corpus_note or corpus_annotation on SQLite (most
column changes) drops these triggers with the old table, and one that rebuilds corpus_corpus fails
while they name it: such a migration drops them first and creates them again after
(0017_deidentified)
(tests/embedded/test_corpus_counters.py runs on SQLite after every migration and fails if one is
missing). PostgreSQL skips this migration.
"""

from django.db import migrations

from webapp.corpus.migrations._sqlite import COUNTER_TRIGGERS, DROP_COUNTER_TRIGGERS, SQLiteOnly


class Migration(migrations.Migration):
    dependencies = [("corpus", "0015_catalog_changes_to_their_projects")]
    operations = [SQLiteOnly(COUNTER_TRIGGERS, DROP_COUNTER_TRIGGERS)]
