"""The review report kind's task, for callers that import it: it runs through workers.runner; the
work is webapp.review.report_store (run)."""

from workers.runner import TASKS

compute_report = TASKS["review report"]
