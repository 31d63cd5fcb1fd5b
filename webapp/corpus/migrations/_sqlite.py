"""Migration operations that only make sense on SQLite, the embedded default (PostgreSQL skips them)."""

from django.db import migrations


class SQLiteOnly(migrations.RunSQL):
    """RunSQL that runs on SQLite and is a no-op on every other database."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "sqlite":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "sqlite":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


# The corpus counters' triggers (0016_corpus_counters_sqlite), and what drops them: a migration
# that rebuilds corpus_corpus, corpus_note or corpus_annotation on SQLite drops them first and
# creates them again after (the last statement recounts).
COUNTER_TRIGGERS = [
    """CREATE TRIGGER corpus_note_count_insert AFTER INSERT ON corpus_note BEGIN
        UPDATE corpus_corpus SET note_count = note_count + 1 WHERE id = new.corpus_id;
    END""",
    """CREATE TRIGGER corpus_note_count_delete AFTER DELETE ON corpus_note BEGIN
        UPDATE corpus_corpus SET
            note_count = note_count - 1,
            annotation_count = annotation_count - (SELECT count(*) FROM corpus_annotation WHERE note_id = old.id)
        WHERE id = old.corpus_id;
    END""",
    """CREATE TRIGGER corpus_annotation_count_insert AFTER INSERT ON corpus_annotation BEGIN
        UPDATE corpus_corpus SET annotation_count = annotation_count + 1
        WHERE id = (SELECT corpus_id FROM corpus_note WHERE id = new.note_id);
    END""",
    """CREATE TRIGGER corpus_annotation_count_delete AFTER DELETE ON corpus_annotation BEGIN
        UPDATE corpus_corpus SET annotation_count = annotation_count - 1
        WHERE id = (SELECT corpus_id FROM corpus_note WHERE id = old.note_id);
    END""",
    """UPDATE corpus_corpus SET
        note_count = (SELECT count(*) FROM corpus_note n WHERE n.corpus_id = corpus_corpus.id),
        annotation_count = (SELECT count(*) FROM corpus_annotation a JOIN corpus_note n ON n.id = a.note_id
                            WHERE n.corpus_id = corpus_corpus.id)""",
]

DROP_COUNTER_TRIGGERS = [
    "DROP TRIGGER IF EXISTS corpus_annotation_count_delete",
    "DROP TRIGGER IF EXISTS corpus_annotation_count_insert",
    "DROP TRIGGER IF EXISTS corpus_note_count_delete",
    "DROP TRIGGER IF EXISTS corpus_note_count_insert",
]
