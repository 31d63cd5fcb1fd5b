"""Cancel and Resume of a unit of any kind, from the registry (webapp.lifecycle.kinds: each kind's
`cancel`, `resume`, `refusal`), so the API (webapp.api.work, which answers with the kind's `api`
schema) calls one helper per action instead of one branch per kind:

    unit = cancel("training run", run, actor)    # the kind's own cancel (audited there), then the row again

A kind's function that refuses (its `refusal` exception: "only a queued or running build can be
cancelled") or that reports nothing was done (None or False, for a kind with `cancel_ended` /
`resume_ended`: the unit had already ended) raises `Refused` with words for the person (the API's
409). Who may act is decided before, by the app's
access helper, as for every page and API call.
"""

from __future__ import annotations

from webapp.lifecycle import kinds


class Refused(Exception):
    """The unit's state refuses the action; the message is in plain words for the person."""


def cancel(kind_name: str, unit, actor):
    """Cancel `unit` (queued: at once; running: at its worker's next safe point). Returns the unit
    as stored now."""
    return _act(kinds.by_name(kind_name), "cancel", unit, actor)


def resume(kind_name: str, unit, actor):
    """Queue `unit` again (cancelled, failed, or its worker lost). Returns the unit as stored now."""
    return _act(kinds.by_name(kind_name), "resume", unit, actor)


def can(kind_name: str, action: str) -> bool:
    """Whether the kind offers `action` ("cancel" or "resume")."""
    return bool(getattr(kinds.by_name(kind_name), action))


def _act(kind: kinds.Kind, action: str, unit, actor):
    path = getattr(kind, action)
    if not path:
        raise Refused(f"A {kind.name} cannot be {'cancelled' if action == 'cancel' else 'resumed'}.")
    refusal = kinds.resolve(kind.refusal) if kind.refusal else Refused
    try:
        outcome = kinds.resolve(path)(unit, actor=actor)
    except refusal as exc:
        raise Refused(str(exc)) from None
    ended = kind.cancel_ended if action == "cancel" else kind.resume_ended
    if ended and not outcome:  # nothing done: the unit had ended, or could not be resumed
        raise Refused(ended)
    unit.refresh_from_db()
    return unit
