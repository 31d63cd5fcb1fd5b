"""Who may do what. The one place that maps roles (auth groups) to capabilities.

clinician: reviews peaks. curator: settles review conflicts (adjudication). researcher: imports, launches jobs, exports, creates, edits and retires
tasks. admin: everything, including the audit log. Views enforce these with `require()`; templates
only use them to hide buttons. A refusal (PermissionDenied, from here or an access helper) is answered by the 403
handler, which writes it to the audit log (webapp.audit.views.permission_denied).
"""

from enum import StrEnum
from functools import wraps

from django.core.exceptions import PermissionDenied


class Role(StrEnum):
    CLINICIAN = "clinician"
    RESEARCHER = "researcher"
    CURATOR = "curator"
    ADMIN = "admin"


class Capability(StrEnum):
    VIEW = "view"
    REVIEW = "review"
    IMPORT = "import"
    LAUNCH = "launch"
    EXPORT = "export"
    MANAGE_TASKS = "manage_tasks"
    ADJUDICATE = "adjudicate"
    AUDIT = "audit"


CAPABILITIES: dict[Capability, frozenset[Role]] = {
    Capability.VIEW: frozenset(Role),
    Capability.REVIEW: frozenset({Role.CLINICIAN, Role.ADMIN}),
    Capability.IMPORT: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.LAUNCH: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.EXPORT: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.MANAGE_TASKS: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.ADJUDICATE: frozenset({Role.CURATOR, Role.ADMIN}),
    Capability.AUDIT: frozenset({Role.ADMIN}),
}


def roles_of(user) -> frozenset[Role]:
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return frozenset(Role)
    cached = getattr(user, "_dsm_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))
        cached = frozenset(role for role in Role if role.value in names)
        user._dsm_roles = cached
    return cached


def has_capability(user, capability: Capability) -> bool:
    return bool(roles_of(user) & CAPABILITIES[capability])


def require(user, capability: Capability) -> None:
    """Raise 403 unless the user has the capability."""
    if not has_capability(user, capability):
        raise PermissionDenied(f"Your role does not allow: {capability.value}")


def capability_required(capability: Capability):
    """View decorator: login is enforced globally by LoginRequiredMiddleware; this checks the role."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            require(request.user, capability)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator
