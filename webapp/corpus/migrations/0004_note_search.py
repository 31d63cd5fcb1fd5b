"""Full-text search over note text on PostgreSQL: a tsvector column kept by a trigger, with a GIN
index, in the text-search configuration of the corpus's language (Italian, English, Spanish and
a few more; 'simple' for any other language: no stemming, no stop words).

The column is not in Django's model state: SQLite (the embedded default) has no tsvector, and
webapp.corpus.search reads it through one SQL expression on PostgreSQL and falls back to a
word-by-word substring match elsewhere. Every write path (ORM, bulk_create, COPY) goes through
the trigger, so imports need no extra step; a corpus whose language changes is re-indexed.
"""

from django.db import migrations

from webapp.corpus.migrations._postgresql import PostgreSQLOnly

FORWARD = r"""
CREATE FUNCTION corpus_search_config(language text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (CASE language
        WHEN 'it' THEN 'italian' WHEN 'ita' THEN 'italian'
        WHEN 'en' THEN 'english' WHEN 'eng' THEN 'english'
        WHEN 'es' THEN 'spanish' WHEN 'spa' THEN 'spanish'
        WHEN 'fr' THEN 'french' WHEN 'de' THEN 'german' WHEN 'pt' THEN 'portuguese'
        WHEN 'nl' THEN 'dutch' WHEN 'ca' THEN 'catalan'
        ELSE 'simple' END)::regconfig
$$;

ALTER TABLE corpus_note ADD COLUMN search tsvector;

CREATE FUNCTION corpus_note_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search := to_tsvector(
        corpus_search_config((SELECT language FROM corpus_corpus WHERE id = NEW.corpus_id)), NEW.text);
    RETURN NEW;
END
$$;
CREATE TRIGGER corpus_note_search BEFORE INSERT OR UPDATE OF text, corpus_id ON corpus_note
    FOR EACH ROW EXECUTE FUNCTION corpus_note_search();

CREATE FUNCTION corpus_corpus_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE corpus_note SET search = to_tsvector(corpus_search_config(NEW.language), text)
    WHERE corpus_id = NEW.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER corpus_corpus_search AFTER UPDATE OF language ON corpus_corpus
    FOR EACH ROW WHEN (OLD.language IS DISTINCT FROM NEW.language)
    EXECUTE FUNCTION corpus_corpus_search();

UPDATE corpus_note n SET search = to_tsvector(corpus_search_config(c.language), n.text)
FROM corpus_corpus c WHERE c.id = n.corpus_id;

CREATE INDEX corpus_note_search_idx ON corpus_note USING gin (search);
"""

BACKWARD = """
DROP TRIGGER IF EXISTS corpus_corpus_search ON corpus_corpus;
DROP FUNCTION IF EXISTS corpus_corpus_search();
DROP TRIGGER IF EXISTS corpus_note_search ON corpus_note;
DROP FUNCTION IF EXISTS corpus_note_search();
ALTER TABLE corpus_note DROP COLUMN IF EXISTS search;
DROP FUNCTION IF EXISTS corpus_search_config(text);
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0003_importjob")]
    operations = [PostgreSQLOnly(FORWARD, BACKWARD)]
