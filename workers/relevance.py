"""The relevance kinds' tasks, for callers that import them (scripts run chunks in-process): they
run through workers.runner; the work is webapp.pipeline.planning (plan) and chunks (run_claimed).
A worker of the "relevance" queue computes AttnLRP relevance, which patches the model code for
the whole process (lxt): it must never train. Run it alone on its queue:

    celery -A workers worker --queues relevance --pool solo     # or prefork, one model per child
"""

from workers.runner import TASKS

plan_job = TASKS["relevance plan"]
run_chunk = TASKS["relevance chunk"]
