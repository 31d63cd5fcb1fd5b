"""The import kind's task, for callers that import it (tests run it in-process): it runs through
workers.runner; the work is webapp.corpus.import_jobs (run_claimed)."""

from workers.runner import TASKS

run_import = TASKS["import"]
