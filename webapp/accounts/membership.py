"""Making projects and changing who is in them: the one place, audited. Pages (the project's
members page), commands (create_project, add_member) and the sign-in through the identity
provider (webapp.accounts.oidc) all come here."""

from django.db import transaction

from ml.catalog import slugify
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role, forget_roles


def create_project(*, name: str, slug: str = "", description: str = "", actor=None, ip=None) -> Project:
    project = Project(name=name.strip(), slug=slug or slugify(name, max_length=100), description=description)
    project.full_clean()
    with transaction.atomic():
        project.created_by = actor if getattr(actor, "is_authenticated", False) else None
        project.save()
        record(actor, AuditEvent.Action.CREATE_PROJECT, project, ip=ip, slug=project.slug)
    return project


def add_member(project: Project, user, role: Role | str, *, actor=None, ip=None, origin=Membership.Origin.APP, **why):
    """Give `user` `role` in `project`; True if it is new (then audited)."""
    role = Role(role)
    with transaction.atomic():
        _, created = Membership.objects.get_or_create(
            project=project, user=user, role=role, defaults={"origin": origin}
        )
        if created:
            record(actor, AuditEvent.Action.ADD_MEMBER, project, ip=ip, user=user.get_username(), role=role, **why)
    forget_roles(user)
    return created


def remove_member(project: Project, user, role: Role | str, *, actor=None, ip=None, **why) -> bool:
    """Take `role` in `project` from `user`; True if they had it (then audited)."""
    role = Role(role)
    with transaction.atomic():
        deleted, _ = Membership.objects.filter(project=project, user=user, role=role).delete()
        if deleted:
            record(actor, AuditEvent.Action.REMOVE_MEMBER, project, ip=ip, user=user.get_username(), role=role, **why)
    forget_roles(user)
    return bool(deleted)


def set_provider_memberships(user, grants: set[tuple[str, str]], *, ip=None, groups=()) -> tuple[list, list]:
    """Make the user's identity-provider memberships exactly `grants` ({(project slug, role)});
    memberships given in the app are left alone. Grants naming an unknown project are skipped
    (a site admin makes the project first). Returns (added, removed) as "slug:role" strings."""
    projects = {p.slug: p for p in Project.objects.filter(slug__in={slug for slug, _ in grants})}
    wanted = {(projects[slug].pk, role) for slug, role in grants if slug in projects}
    current = {
        (m.project_id, m.role): m
        for m in Membership.objects.filter(user=user, origin=Membership.Origin.IDP).select_related("project")
    }
    by_id = {p.pk: p for p in projects.values()}
    added, removed = [], []
    for key in sorted(wanted - set(current)):
        project = by_id[key[0]]
        if add_member(project, user, key[1], actor=user, ip=ip, origin=Membership.Origin.IDP, groups=list(groups)):
            added.append(f"{project.slug}:{key[1]}")
    for key in sorted(set(current) - wanted):
        membership = current[key]
        if remove_member(membership.project, user, key[1], actor=user, ip=ip, groups=list(groups)):
            removed.append(f"{membership.project.slug}:{key[1]}")
    return added, removed
