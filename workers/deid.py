"""The de-identification kind's task, for callers that import it: it runs through workers.runner;
the work is webapp.deid_ops.work (run)."""

from workers.runner import TASKS

run_job = TASKS["deidentify"]
