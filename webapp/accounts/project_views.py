"""Project pages: the projects a user belongs to; a project's members, managed by its admins and
by site admins; new projects, made by site admins. Changes go through webapp.accounts.membership
(audited)."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts import membership
from webapp.accounts.forms import MemberForm, ProjectForm
from webapp.audit.client_ip import client_address
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Capability, has_capability, is_site_admin, require, roles_of


def _project_for(user, slug: str, capability: Capability = Capability.VIEW) -> Project:
    """A project the user belongs to (any project for a site admin), else 404; then 403 unless
    their role there has `capability`."""
    project = get_object_or_404(Project.objects.where(user), slug=slug)
    require(user, capability, project)
    return project


def project_list(request):
    projects = [(p, sorted(roles_of(request.user, p))) for p in Project.objects.where(request.user)]
    form = ProjectForm() if is_site_admin(request.user) else None
    return render(request, "projects/project_list.html", {"nav": "projects", "projects": projects, "form": form})


@require_POST
def project_new(request):
    if not is_site_admin(request.user):
        raise PermissionDenied("Only site admins make projects.")
    form = ProjectForm(request.POST)
    if form.is_valid():
        try:
            project = membership.create_project(**form.cleaned_data, actor=request.user, ip=client_address(request))
        except ValidationError as exc:
            for field, problems in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            messages.success(request, f"Project {project.name} made; add its members here.")
            return redirect("projects:detail", project.slug)
    projects = [(p, sorted(roles_of(request.user, p))) for p in Project.objects.where(request.user)]
    context = {"nav": "projects", "projects": projects, "form": form}
    return render(request, "projects/project_list.html", context, status=400)


def project_detail(request, slug):
    project = _project_for(request.user, slug)
    manage = has_capability(request.user, Capability.MANAGE_MEMBERS, project)
    return _detail(request, project, MemberForm() if manage else None)


def _detail(request, project, form, status=200):
    members = Membership.objects.filter(project=project).select_related("user").order_by("user__username", "role")
    context = {
        "nav": "projects",
        "project": project,
        "members": members,
        "form": form,
        "corpora": project.corpora.order_by("name"),
        "mlflow_experiment": project.mlflow_experiment,
    }
    return render(request, "projects/project_detail.html", context, status=status)


@require_POST
def member_add(request, slug):
    project = _project_for(request.user, slug, Capability.MANAGE_MEMBERS)
    form = MemberForm(request.POST)
    if not form.is_valid():
        return _detail(request, project, form, status=400)
    user, role = form.cleaned_data["username"], form.cleaned_data["role"]
    if membership.add_member(project, user, role, actor=request.user, ip=client_address(request)):
        messages.success(request, f"{user.get_username()} is now {role} in {project.name}.")
    else:
        messages.info(request, f"{user.get_username()} already was {role} in {project.name}.")
    return redirect("projects:detail", project.slug)


@require_POST
def member_remove(request, slug, membership_id):
    project = _project_for(request.user, slug, Capability.MANAGE_MEMBERS)
    found = get_object_or_404(Membership.objects.select_related("user"), pk=membership_id, project=project)
    membership.remove_member(project, found.user, found.role, actor=request.user, ip=client_address(request))
    messages.success(request, f"{found.user.get_username()} is no longer {found.role} in {project.name}.")
    return redirect("projects:detail", project.slug)


@require_POST
def tracking_switch(request, slug):
    """Turn the project's MLflow tracking on (`on`=1) or off: nothing of a project reaches the
    tracking server until one of its admins decides so (audited)."""
    project = _project_for(request.user, slug, Capability.MANAGE_MEMBERS)
    on = request.POST.get("on") == "1"
    if project.mlflow_tracking != on:
        Project.objects.filter(pk=project.pk).update(mlflow_tracking=on)
        record(request.user, AuditEvent.Action.EDIT_PROJECT, project, mlflow_tracking=on, ip=client_address(request))
    messages.success(request, f"MLflow tracking is {'on' if on else 'off'} for {project.name}.")
    return redirect("projects:detail", project.slug)
