"""A pattern index on note ids, so "the id starts with ..." (the note browsers' search) is an index
range scan on PostgreSQL instead of a walk through the corpus. The unique (corpus, external_id)
index cannot serve LIKE 'prefix%' under a non-C collation; varchar_pattern_ops can. PostgreSQL only
(SQLite corpora are small)."""

from django.db import migrations

from webapp.corpus.migrations._postgresql import PostgreSQLOnly

FORWARD = "CREATE INDEX corpus_note_external_id_prefix ON corpus_note (external_id varchar_pattern_ops);"
BACKWARD = "DROP INDEX IF EXISTS corpus_note_external_id_prefix;"


class Migration(migrations.Migration):
    dependencies = [("corpus", "0005_corpus_counters")]
    operations = [PostgreSQLOnly(FORWARD, BACKWARD)]
