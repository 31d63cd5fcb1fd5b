"""PostgreSQL triggers for the cross-row rules a CHECK constraint cannot express.

- corpus_note: content_hash = sha256(text); a text change must keep every annotation span inside it.
- corpus_task: options are distinct non-empty strings; a change of options must keep every
  existing annotation's label among them.
- corpus_annotation: label is one of the task's options; each evidence span is a pair of
  integers [start, end) with 0 <= start < end <= char_length(note text).

They raise SQLSTATE 23514 (check_violation), which Django reports as IntegrityError, so raw
INSERT/UPDATE/COPY is refused like an ORM save. Messages carry ids and offsets, never note text.
On SQLite this migration does nothing: `webapp.lib.validators` (used by `clean()` and the
importer) is the guard there.
"""

from django.db import migrations

from webapp.corpus.migrations._postgresql import PostgreSQLOnly

FORWARD = r"""
CREATE FUNCTION corpus_note_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.content_hash IS DISTINCT FROM encode(sha256(convert_to(NEW.text, 'UTF8')), 'hex') THEN
        RAISE EXCEPTION 'note %: content_hash is not the SHA-256 of the text', NEW.external_id
            USING ERRCODE = 'check_violation';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.text IS DISTINCT FROM OLD.text AND EXISTS (
        SELECT 1 FROM corpus_annotation a, jsonb_array_elements(a.evidence) span
        WHERE a.note_id = NEW.id AND jsonb_typeof(a.evidence) = 'array'
          AND (span ->> 1)::bigint > char_length(NEW.text)
    ) THEN
        RAISE EXCEPTION 'note %: an annotation span would end past the new text (length %)',
            NEW.external_id, char_length(NEW.text) USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER corpus_note_check BEFORE INSERT OR UPDATE ON corpus_note
    FOR EACH ROW EXECUTE FUNCTION corpus_note_check();

CREATE FUNCTION corpus_task_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad_label text;
BEGIN
    IF jsonb_typeof(NEW.options) = 'array' THEN
        IF EXISTS (
            SELECT 1 FROM jsonb_array_elements(NEW.options) o
            WHERE jsonb_typeof(o) <> 'string' OR o #>> '{}' = ''
        ) THEN
            RAISE EXCEPTION 'task %: every option must be a non-empty string', NEW.slug
                USING ERRCODE = 'check_violation';
        END IF;
        IF (SELECT count(DISTINCT o) FROM jsonb_array_elements(NEW.options) o) <> jsonb_array_length(NEW.options) THEN
            RAISE EXCEPTION 'task %: options must be distinct', NEW.slug USING ERRCODE = 'check_violation';
        END IF;
        IF TG_OP = 'UPDATE' AND NEW.options IS DISTINCT FROM OLD.options THEN
            SELECT a.label INTO bad_label FROM corpus_annotation a
            WHERE a.task_id = NEW.id AND NOT (NEW.options ? a.label) LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'task %: existing annotations use label %, which the new options drop',
                    NEW.slug, quote_literal(bad_label) USING ERRCODE = 'check_violation';
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER corpus_task_check BEFORE INSERT OR UPDATE ON corpus_task
    FOR EACH ROW EXECUTE FUNCTION corpus_task_check();

CREATE FUNCTION corpus_annotation_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    task_options jsonb;
    text_length bigint;
    span jsonb;
    span_start bigint;
    span_end bigint;
BEGIN
    SELECT options INTO task_options FROM corpus_task WHERE id = NEW.task_id;
    IF FOUND AND NOT (task_options ? NEW.label) THEN
        RAISE EXCEPTION 'annotation of note %: label % is not one of the options of task %',
            NEW.note_id, quote_literal(NEW.label), NEW.task_id USING ERRCODE = 'check_violation';
    END IF;
    IF jsonb_typeof(NEW.evidence) <> 'array' THEN
        RETURN NEW;  -- the CHECK constraint corpus_annotation_evidence_array refuses it
    END IF;
    SELECT char_length(text) INTO text_length FROM corpus_note WHERE id = NEW.note_id;
    FOR span IN SELECT value FROM jsonb_array_elements(NEW.evidence) LOOP
        -- Nested IFs: SQL does not promise to short-circuit OR, and jsonb_array_length fails on scalars.
        IF jsonb_typeof(span) <> 'array' THEN
            RAISE EXCEPTION 'annotation of note %: each evidence span must be [start, end]', NEW.note_id
                USING ERRCODE = 'check_violation';
        END IF;
        IF jsonb_array_length(span) <> 2 THEN
            RAISE EXCEPTION 'annotation of note %: each evidence span must be [start, end]', NEW.note_id
                USING ERRCODE = 'check_violation';
        END IF;
        IF jsonb_typeof(span -> 0) <> 'number' OR jsonb_typeof(span -> 1) <> 'number'
           OR (span ->> 0) !~ '^-?[0-9]+$' OR (span ->> 1) !~ '^-?[0-9]+$' THEN
            RAISE EXCEPTION 'annotation of note %: evidence offsets must be integers', NEW.note_id
                USING ERRCODE = 'check_violation';
        END IF;
        span_start := (span ->> 0)::bigint;
        span_end := (span ->> 1)::bigint;
        IF span_start < 0 OR span_start >= span_end OR (text_length IS NOT NULL AND span_end > text_length) THEN
            RAISE EXCEPTION 'annotation of note %: evidence span [%, %) does not fit the text (length %)',
                NEW.note_id, span_start, span_end, text_length USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;
CREATE TRIGGER corpus_annotation_check BEFORE INSERT OR UPDATE ON corpus_annotation
    FOR EACH ROW EXECUTE FUNCTION corpus_annotation_check();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS corpus_annotation_check ON corpus_annotation;
DROP FUNCTION IF EXISTS corpus_annotation_check();
DROP TRIGGER IF EXISTS corpus_task_check ON corpus_task;
DROP FUNCTION IF EXISTS corpus_task_check();
DROP TRIGGER IF EXISTS corpus_note_check ON corpus_note;
DROP FUNCTION IF EXISTS corpus_note_check();
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0001_initial")]
    operations = [PostgreSQLOnly(FORWARD, BACKWARD)]
