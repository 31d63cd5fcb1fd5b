"""The one access layer: which rows a user may see, decided from their project memberships.

Every model a project owns uses `ProjectScopedQuerySet` (directly or through its own queryset
class) and says where its project is: `project_paths`, lookups from the model to a Project, any
of which may match (a training run reaches its project through its dataset or its split), and
`shared_when`, a lookup for rows that belong to no project and every member may see (the task
catalog, base models). Pages, downloads, htmx fragments and commands acting for a user all fetch
through `visible_to` or `get_or_404`, so:

- another project's object is a 404 (its existence is not disclosed);
- an object of the user's own project that their role may not act on is a 403.

People are no project's rows, but a form that names one by id (a round's reviewer) resolves it
through `member_or_404`: a user who is not a member of the project is an unknown id, so no pk
answers with another project's username.
"""

from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404

from webapp.projects.roles import Capability, has_capability, projects_with, require


class ProjectScopedQuerySet(models.QuerySet):
    def visible_to(self, user, capability: Capability = Capability.VIEW):
        """The rows of the projects where `user` has `capability` (and shared rows)."""
        return self.filter(scope_filter(self.model, user, capability))

    def of_project(self, project_id: int):
        """The rows of one project and the shared rows: the choices a page of that project offers,
        whoever looks (a member of several projects sees on A's pages only A's and shared rows)."""
        return self.filter(project_filter(self.model, project_id))


def scope_filter(model, user, capability: Capability = Capability.VIEW) -> Q:
    project_ids = projects_with(user, capability)
    if project_ids is None:  # a site admin
        return Q()
    condition = Q(pk__in=[])
    for path in model.project_paths:
        condition |= Q(**{f"{path}__in": project_ids})
    shared = getattr(model, "shared_when", None)
    if shared and has_capability(user, capability):
        condition |= Q(**shared)
    return condition


def project_filter(model, project_id: int) -> Q:
    condition = Q(pk__in=[])
    for path in model.project_paths:
        condition |= Q(**{path: project_id})
    shared = getattr(model, "shared_when", None)
    if shared:
        condition |= Q(**shared)
    return condition


def project_id_of(obj) -> int | None:
    """The id of the project `obj` belongs to, following its model's project_paths; None for a shared row."""
    for path in type(obj).project_paths:
        *hops, last = path.split("__")
        target = obj
        for hop in hops:
            try:
                target = getattr(target, hop)
            except ObjectDoesNotExist:  # an absent reverse one-to-one (a base model has no run)
                target = None
            if target is None:
                break
        if target is not None:
            project_id = getattr(target, f"{last}_id", None)
            if project_id is not None:
                return project_id
    return None


def get_or_404(user, queryset, capability: Capability = Capability.VIEW, **lookup):
    """The object of `queryset` matching `lookup` that `user` may see, else 404; then 403 unless
    their role in the object's project has `capability`."""
    obj = get_object_or_404(queryset.visible_to(user, Capability.VIEW), **lookup)
    if capability != Capability.VIEW:
        require(user, capability, project_id_of(obj))
    return obj


def check_or_404(user, obj, capability: Capability = Capability.VIEW):
    """What get_or_404 decides, for an object fetched without `visible_to` (by a query built once:
    webapp.db.prepared): 404 unless `obj` (None: no such row) is of a project where `user` may
    see, then 403 unless their role there has `capability`. For models with one project path and
    no shared rows, where the object's project is the one the filter would test."""
    model = type(obj) if obj is not None else None
    if model is not None and (len(model.project_paths) != 1 or getattr(model, "shared_when", None)):
        raise TypeError(f"{model.__name__}: check_or_404 needs one project path and no shared rows")
    project_ids = projects_with(user, Capability.VIEW)
    project_id = project_id_of(obj) if obj is not None else None
    if obj is None or (project_ids is not None and project_id not in project_ids):
        raise Http404("No such object.")
    if capability != Capability.VIEW:
        require(user, capability, project_id)
    return obj


def members_of(project_id: int):
    """The active users with a membership (any role) in the project."""
    from webapp.projects.models import Membership  # the models' module imports this one

    members = Membership.objects.filter(project_id=project_id).values("user")
    return get_user_model().objects.filter(is_active=True, pk__in=members)


def member_or_404(project_id: int, user_id, *, also=None):
    """The member of the project whose id is `user_id` (a value from a form: text or a number), or
    a user of `also` (a queryset of users the form may still name, e.g. reviewers of a round who
    have left the project); else 404, as for an id that does not exist."""
    try:
        pk = int(user_id)
    except (TypeError, ValueError):
        raise Http404("No such user.") from None
    found = members_of(project_id).filter(pk=pk).first()
    if found is None and also is not None:
        found = also.filter(pk=pk).first()
    if found is None:
        raise Http404("No such user.")
    return found
