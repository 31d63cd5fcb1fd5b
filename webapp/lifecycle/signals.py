"""Ends of work that no worker's task sees, told to whoever listens (the webhooks:
webapp.integrations.events) without the app that ends the work knowing who does.

A unit usually ends inside its worker's task, and the workers' `task_postrun` hears of it. A
queued unit that is cancelled ends at once in the process that cancelled it (a page or an API
call), and no task of its will run; `unit_ended` tells it after the commit. A review round ends
when the decision that gives its last pair its k-th judgement is committed: `round_completed`.
Listeners must be idempotent: an end may be heard twice.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.dispatch import Signal

# sender: the unit's model class; keyword argument pk
unit_ended = Signal()

# Sent (after the commit) when a decision completes a review round: every pair has k finished
# judgements (webapp.review.rounds). sender: ReviewRound; keyword argument round.
round_completed = Signal()


def announce_after_commit(model, pk: int) -> None:
    transaction.on_commit(partial(unit_ended.send, sender=model, pk=pk))
