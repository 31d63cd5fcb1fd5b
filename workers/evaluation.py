"""The evaluation kind's task, for callers that import it: it runs through workers.runner; the
work is webapp.evaluation.running (run_claimed)."""

from workers.runner import TASKS

run_evaluation = TASKS["evaluation"]
