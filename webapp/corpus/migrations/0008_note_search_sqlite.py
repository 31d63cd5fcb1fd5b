"""Full-text search over note text on SQLite (the embedded default): an FTS5 index of corpus_note.

The index holds no copy of the text (an external-content table: it reads corpus_note) and folds
case and accents (unicode61, remove_diacritics 2), whatever the corpus's language; word forms
are found at query time (webapp.corpus.search). Three triggers keep it in step with every write
(ORM, bulk_create, bulk_update, cascade deletes). PostgreSQL has its own index (0004_note_search)
and skips this migration.

A later migration that makes Django rebuild corpus_note on SQLite (most column changes) drops
these triggers with the old table: it must create them again. The search tests run on SQLite
after every migration, so a missing trigger fails them.
"""

from django.db import migrations

from webapp.corpus.migrations._sqlite import SQLiteOnly

FORWARD = [
    """CREATE VIRTUAL TABLE corpus_note_fts USING fts5(
        text, content='corpus_note', content_rowid='id', tokenize='unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER corpus_note_fts_insert AFTER INSERT ON corpus_note BEGIN
        INSERT INTO corpus_note_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    # An external-content index forgets a row by being told the text it indexed.
    """CREATE TRIGGER corpus_note_fts_delete AFTER DELETE ON corpus_note BEGIN
        INSERT INTO corpus_note_fts (corpus_note_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
    """CREATE TRIGGER corpus_note_fts_update AFTER UPDATE OF text ON corpus_note BEGIN
        INSERT INTO corpus_note_fts (corpus_note_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO corpus_note_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    "INSERT INTO corpus_note_fts (corpus_note_fts) VALUES ('rebuild')",
]

BACKWARD = [
    "DROP TRIGGER IF EXISTS corpus_note_fts_update",
    "DROP TRIGGER IF EXISTS corpus_note_fts_delete",
    "DROP TRIGGER IF EXISTS corpus_note_fts_insert",
    "DROP TABLE IF EXISTS corpus_note_fts",
]


class Migration(migrations.Migration):
    dependencies = [("corpus", "0007_task_decision_count")]
    operations = [SQLiteOnly(FORWARD, BACKWARD)]
