"""The erasure kind's task, for callers that import it: it runs through workers.runner; the work
is webapp.erasure.erasing."""

from workers.runner import TASKS

run_erasure = TASKS["erasure"]
