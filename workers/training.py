"""The training kind's task, for callers that import it: it runs through workers.runner; the work
is webapp.training.execution (run_claimed; a distributed launch: webapp.training.distributed).
A worker of this queue trains models: it must never have computed AttnLRP relevance, whose lxt
patches are process-global. Run it alone on its queue, one run at a time:

    celery -A workers worker --queues training --concurrency 1 --hostname training@%h
"""

from workers.runner import TASKS

run_training = TASKS["training run"]
