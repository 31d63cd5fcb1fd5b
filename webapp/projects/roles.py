"""Who may do what. The one place that maps roles to capabilities.

A role is held in a project (Membership, beside this module in webapp.projects.models); which
objects a user may see is decided by webapp.projects.scoping from the same memberships. The
memberships are read through the user's `memberships` relation, so this module imports no model
and the models import the roles one way.

clinician: reviews peaks. curator: settles review conflicts (adjudication). researcher: imports,
launches jobs, exports, creates, edits and retires tasks. admin (of a project): everything in it,
including its members and its audit rows. Views fetch objects through the access helpers
(webapp.projects.scoping.get_or_404): another project's object is a 404, a capability the role
lacks in the object's own project a 403. Templates only use roles to hide buttons. A refusal
(PermissionDenied) is answered by the 403 handler, which writes it to the audit log
(webapp.audit.views.permission_denied).
"""

import secrets
from enum import StrEnum
from functools import wraps

from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils.translation import gettext_lazy


class Role(StrEnum):
    CLINICIAN = "clinician"
    RESEARCHER = "researcher"
    CURATOR = "curator"
    ADMIN = "admin"


# A role's name as the pages show it, in the reader's language (the value stays the stored key,
# the one OIDC_GROUP_ROLES and the API use).
ROLE_NAMES = {
    Role.CLINICIAN: gettext_lazy("clinician"),
    Role.RESEARCHER: gettext_lazy("researcher"),
    Role.CURATOR: gettext_lazy("curator"),
    Role.ADMIN: gettext_lazy("admin"),
}


def role_name(role) -> str:
    """'clinician' -> its name in the active language; an unknown value as it is."""
    try:
        return str(ROLE_NAMES[Role(role)])
    except ValueError:
        return str(role)


class Capability(StrEnum):
    VIEW = "view"
    REVIEW = "review"
    IMPORT = "import"
    LAUNCH = "launch"
    EXPORT = "export"
    MANAGE_TASKS = "manage_tasks"
    ADJUDICATE = "adjudicate"
    MANAGE_MEMBERS = "manage_members"
    AUDIT = "audit"


CAPABILITIES: dict[Capability, frozenset[Role]] = {
    Capability.VIEW: frozenset(Role),
    Capability.REVIEW: frozenset({Role.CLINICIAN, Role.ADMIN}),
    Capability.IMPORT: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.LAUNCH: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.EXPORT: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.MANAGE_TASKS: frozenset({Role.RESEARCHER, Role.ADMIN}),
    Capability.ADJUDICATE: frozenset({Role.CURATOR, Role.ADMIN}),
    Capability.MANAGE_MEMBERS: frozenset({Role.ADMIN}),
    Capability.AUDIT: frozenset({Role.ADMIN}),
}


# The memberships of a user are also kept in Django's cache (Redis when set: shared by every web
# worker), so a page reads no membership row. The entry holds the generation token of the user
# (and everyone's) it was read under: any change of one of their memberships (a save or a delete,
# also a project's cascade: `roles_changed`, connected in the app's ready) sets a new token at once
# and again after the transaction commits, so the next request finds the tokens changed and reads
# the rows afresh; a reader that raced the change stored what it read under the old tokens, which
# no longer match. The tokens and the entry come in one round trip. Keys name the user's id and
# when the user joined (a database made again reuses ids) only: no note text, no patient
# identifier.
ROLES_KEY = "projects:roles:v2:{}"
GENERATION_KEY = "projects:roles-generation:{}"
ROLES_TIMEOUT = 600  # seconds an entry is kept; a change never waits for it


EVERYONE = "all"  # the generation every entry also holds: renewed when a change names no user


def _generation(user_id: int, found: dict) -> str:
    """Everyone's token and the user's from `found` (what a get_many read); a missing one is set
    (add: two requests that race keep the first)."""
    names = (GENERATION_KEY.format(EVERYONE), GENERATION_KEY.format(user_id))
    for name in names:
        if name not in found:
            cache.add(name, secrets.token_hex(8), None)
            found[name] = cache.get(name)
    return "-".join(found[name] for name in names)


def _memberships(user) -> dict[int, frozenset[Role]]:
    """{project id: roles} of an active user, read once per request (cached on the user object)
    and kept in Django's cache until one of their memberships changes."""
    cached = getattr(user, "_dsm_memberships", None)
    if cached is None:
        key = ROLES_KEY.format(f"{user.pk}-{user.date_joined.timestamp()}")
        found = cache.get_many([GENERATION_KEY.format(EVERYONE), GENERATION_KEY.format(user.pk), key])
        entry = found.pop(key, None)
        generation = _generation(user.pk, found)
        if entry is not None and entry[0] == generation:
            stored = entry[1]
        else:
            stored = {}
            for project_id, role in user.memberships.values_list("project_id", "role"):
                stored.setdefault(project_id, []).append(str(role))
            cache.set(key, (generation, stored), ROLES_TIMEOUT)
        cached = {project_id: frozenset(Role(r) for r in roles) for project_id, roles in stored.items()}
        user._dsm_memberships = cached
    return cached


def roles_changed(user_id: int | None) -> None:
    """A membership of the user was saved or deleted: their kept roles are read afresh by the next
    request, now and once the transaction commits (the Membership signals call this). None: a
    membership whose user is not known any more (deleted by primary key alone, as an erasure
    does), so everyone's kept roles are read afresh."""
    key = GENERATION_KEY.format(EVERYONE if user_id is None else user_id)

    def renew():
        cache.set(key, secrets.token_hex(8), None)

    renew()
    transaction.on_commit(renew)


def forget_roles(user) -> None:
    """Drop the cached memberships after changing them."""
    user.__dict__.pop("_dsm_memberships", None)


def is_site_admin(user) -> bool:
    """Site admins (superusers) manage projects and members and act in every project."""
    return bool(user.is_authenticated and user.is_active and user.is_superuser)


def roles_of(user, project=None) -> frozenset[Role]:
    """The user's roles in `project` (a Project or its id), or in any project when it is None."""
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return frozenset(Role)
    memberships = _memberships(user)
    if project is None:
        return frozenset().union(*memberships.values())
    return memberships.get(getattr(project, "pk", project), frozenset())


def projects_with(user, capability: Capability) -> list[int] | None:
    """Ids of the projects where the user has `capability`; None means every project (site admin)."""
    if is_site_admin(user):
        return None
    if not user.is_authenticated or not user.is_active:
        return []
    allowed = CAPABILITIES[capability]
    return sorted(pid for pid, roles in _memberships(user).items() if roles & allowed)


def has_capability(user, capability: Capability, project=None) -> bool:
    """In `project`; with project None, in at least one project (what menus and lists need)."""
    return bool(roles_of(user, project) & CAPABILITIES[capability])


def require(user, capability: Capability, project=None) -> None:
    """Raise 403 unless the user has the capability (in `project`, or in some project)."""
    if not has_capability(user, capability, project):
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
