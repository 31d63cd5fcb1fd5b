"""Ends of long work that no worker's task sees.

A unit usually ends inside its worker's task, and the workers' `task_postrun` hears of it
(webapp.api.events). A queued unit that is cancelled ends at once in the process that cancelled
it (a page or an API call), and no task of its will run; `unit_ended` tells whoever listens
(the webhooks) after the commit. Listeners must be idempotent: an end may be heard twice.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.dispatch import Signal

# sender: the unit's model class; keyword argument pk
unit_ended = Signal()


def announce_after_commit(model, pk: int) -> None:
    transaction.on_commit(partial(unit_ended.send, sender=model, pk=pk))
