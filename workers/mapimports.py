"""The map import kind's task, for callers that import it: it runs through workers.runner; the
work is webapp.pipeline.mapimport_jobs (run_claimed)."""

from workers.runner import TASKS

run_map_import = TASKS["map import"]
