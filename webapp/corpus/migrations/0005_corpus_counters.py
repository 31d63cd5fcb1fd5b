"""Notes and annotations per corpus as counters on the corpus row, kept by PostgreSQL triggers.

Statement-level triggers with transition tables: one UPDATE per corpus per statement, however
many rows a bulk insert, a COPY or a cascade delete touches. A note never moves to another
corpus, so only INSERT and DELETE change a count. Concurrent imports into ONE corpus wait on
its row until the first commits (imports into different corpora do not). On SQLite (the
embedded default, small corpora) the counters stay 0 and webapp.corpus.stats counts instead.
"""

from django.db import migrations, models

from webapp.corpus.migrations._postgresql import PostgreSQLOnly

FORWARD = r"""
CREATE FUNCTION corpus_note_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE corpus_corpus c SET note_count = c.note_count + d.n
        FROM (SELECT corpus_id, count(*) AS n FROM new_rows GROUP BY corpus_id) d WHERE c.id = d.corpus_id;
    ELSE
        UPDATE corpus_corpus c SET note_count = c.note_count - d.n
        FROM (SELECT corpus_id, count(*) AS n FROM old_rows GROUP BY corpus_id) d WHERE c.id = d.corpus_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER corpus_note_count_insert AFTER INSERT ON corpus_note
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION corpus_note_count();
CREATE TRIGGER corpus_note_count_delete AFTER DELETE ON corpus_note
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION corpus_note_count();

CREATE FUNCTION corpus_annotation_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE corpus_corpus c SET annotation_count = c.annotation_count + d.n
        FROM (SELECT n.corpus_id, count(*) AS n FROM new_rows a JOIN corpus_note n ON n.id = a.note_id
              GROUP BY n.corpus_id) d WHERE c.id = d.corpus_id;
    ELSE
        UPDATE corpus_corpus c SET annotation_count = c.annotation_count - d.n
        FROM (SELECT n.corpus_id, count(*) AS n FROM old_rows a JOIN corpus_note n ON n.id = a.note_id
              GROUP BY n.corpus_id) d WHERE c.id = d.corpus_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER corpus_annotation_count_insert AFTER INSERT ON corpus_annotation
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION corpus_annotation_count();
CREATE TRIGGER corpus_annotation_count_delete AFTER DELETE ON corpus_annotation
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION corpus_annotation_count();

UPDATE corpus_corpus c SET
    note_count = (SELECT count(*) FROM corpus_note n WHERE n.corpus_id = c.id),
    annotation_count = (SELECT count(*) FROM corpus_annotation a JOIN corpus_note n ON n.id = a.note_id
                        WHERE n.corpus_id = c.id);
"""

BACKWARD = """
DROP TRIGGER IF EXISTS corpus_annotation_count_delete ON corpus_annotation;
DROP TRIGGER IF EXISTS corpus_annotation_count_insert ON corpus_annotation;
DROP FUNCTION IF EXISTS corpus_annotation_count();
DROP TRIGGER IF EXISTS corpus_note_count_delete ON corpus_note;
DROP TRIGGER IF EXISTS corpus_note_count_insert ON corpus_note;
DROP FUNCTION IF EXISTS corpus_note_count();
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0004_note_search")]
    operations = [
        migrations.AddField(
            model_name="corpus",
            name="annotation_count",
            field=models.BigIntegerField(default=0, db_default=0, editable=False),
        ),
        migrations.AddField(
            model_name="corpus",
            name="note_count",
            field=models.BigIntegerField(default=0, db_default=0, editable=False),
        ),
        PostgreSQLOnly(FORWARD, BACKWARD),
    ]
