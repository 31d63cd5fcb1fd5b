"""Review decisions per task as a counter on the task row (corpus.Task.decision_count), kept by
PostgreSQL triggers on review_peakdecision, as migration corpus 0005 keeps the corpus counters.

Statement-level triggers with transition tables: one UPDATE per task per statement, however many
rows a bulk insert or a cascade delete (a note's or a corpus's) touches. An UPDATE changes a count
only when it moves decisions to another task; a reviewer changing or undoing a decision leaves
the task row alone (and unlocked). TRUNCATE sets every counter to 0. A task with decisions cannot
be deleted (PROTECT). CREATE TRIGGER holds off decision writes until this migration commits, so
the backfill counts every row. On SQLite the counter stays 0 and webapp.corpus.stats counts instead.
"""

from django.db import migrations

from webapp.corpus.migrations._postgresql import PostgreSQLOnly

FORWARD = r"""
CREATE FUNCTION review_task_decision_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE corpus_task t SET decision_count = t.decision_count + d.n
        FROM (SELECT task_id, count(*) AS n FROM new_rows GROUP BY task_id) d WHERE t.id = d.task_id;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE corpus_task t SET decision_count = t.decision_count - d.n
        FROM (SELECT task_id, count(*) AS n FROM old_rows GROUP BY task_id) d WHERE t.id = d.task_id;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE corpus_task t SET decision_count = t.decision_count + d.n
        FROM (SELECT task_id, sum(n) AS n
              FROM (SELECT task_id, 1 AS n FROM new_rows UNION ALL SELECT task_id, -1 FROM old_rows) moved
              GROUP BY task_id HAVING sum(n) <> 0) d
        WHERE t.id = d.task_id;
    ELSE
        UPDATE corpus_task SET decision_count = 0 WHERE decision_count <> 0;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER review_task_decision_count_insert AFTER INSERT ON review_peakdecision
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION review_task_decision_count();
CREATE TRIGGER review_task_decision_count_update AFTER UPDATE ON review_peakdecision
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION review_task_decision_count();
CREATE TRIGGER review_task_decision_count_delete AFTER DELETE ON review_peakdecision
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION review_task_decision_count();
CREATE TRIGGER review_task_decision_count_truncate AFTER TRUNCATE ON review_peakdecision
    FOR EACH STATEMENT EXECUTE FUNCTION review_task_decision_count();

UPDATE corpus_task t SET decision_count = (SELECT count(*) FROM review_peakdecision d WHERE d.task_id = t.id);
"""

BACKWARD = """
DROP TRIGGER IF EXISTS review_task_decision_count_truncate ON review_peakdecision;
DROP TRIGGER IF EXISTS review_task_decision_count_delete ON review_peakdecision;
DROP TRIGGER IF EXISTS review_task_decision_count_update ON review_peakdecision;
DROP TRIGGER IF EXISTS review_task_decision_count_insert ON review_peakdecision;
DROP FUNCTION IF EXISTS review_task_decision_count();
"""


class Migration(migrations.Migration):
    dependencies = [("corpus", "0007_task_decision_count"), ("review", "0003_validation_set_retirement")]
    operations = [PostgreSQLOnly(FORWARD, BACKWARD)]
