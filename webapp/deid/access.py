"""Fetch de-identification objects for views through the access layer (webapp.projects.scoping):
404 for what does not exist or belongs to a project the user is not in, 403 for what their role
there may not do. The policy is its project's admins' (Capability.MANAGE_MEMBERS); a job is seen
by the project's members and launched, cancelled and resumed by those who may launch work."""

from django.shortcuts import get_object_or_404

from webapp.deid.models import DeidJob
from webapp.projects.models import Project
from webapp.projects.roles import Capability, require
from webapp.projects.scoping import get_or_404

EDIT_POLICY = Capability.MANAGE_MEMBERS  # project admins (webapp.projects.roles)


def project_for_policy(user, slug: str, capability: Capability = EDIT_POLICY) -> Project:
    """A project the user belongs to (any, for a site admin), else 404; then 403 unless an admin."""
    project = get_object_or_404(Project.objects.where(user), slug=slug)
    require(user, capability, project)
    return project


def job_for(user, job_id: int, capability: Capability = Capability.VIEW) -> DeidJob:
    queryset = DeidJob.objects.select_related("project", "source", "target", "created_by")
    return get_or_404(user, queryset, capability, pk=job_id)
