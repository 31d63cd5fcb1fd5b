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
column changes) drops these triggers with the old table: it must create them again
(tests/embedded/test_corpus_counters.py runs on SQLite after every migration and fails if one is
missing). PostgreSQL skips this migration.
"""

from django.db import migrations

from webapp.corpus.migrations._sqlite import SQLiteOnly

FORWARD = [
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

BACKWARD = [
    "DROP TRIGGER IF EXISTS corpus_annotation_count_delete",
    "DROP TRIGGER IF EXISTS corpus_annotation_count_insert",
    "DROP TRIGGER IF EXISTS corpus_note_count_delete",
    "DROP TRIGGER IF EXISTS corpus_note_count_insert",
]


class Migration(migrations.Migration):
    dependencies = [("corpus", "0015_catalog_changes_to_their_projects")]
    operations = [SQLiteOnly(FORWARD, BACKWARD)]
