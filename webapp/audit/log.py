"""Write audit entries. Callers pass ids and counts, never note text."""
from webapp.audit.models import AuditEvent


def record(actor, action: str, obj=None, **details) -> AuditEvent:
    """Record that `actor` (a User, or None for the command line) did `action` to `obj`."""
    user = actor if getattr(actor, "is_authenticated", False) else None
    name = user.get_username() if user else (str(actor) if actor else "system")
    return AuditEvent.objects.create(
        actor=user,
        actor_name=name,
        action=action,
        object_type=obj._meta.label if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        details=details,
    )
