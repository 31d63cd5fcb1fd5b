"""Project pages: the projects a user belongs to; a project's members, managed by its admins and
by site admins; new projects, made by site admins. Changes go through webapp.accounts.membership
(audited)."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from webapp.accounts import membership
from webapp.accounts.forms import MemberForm, ProjectForm
from webapp.audit.client_ip import client_address
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Capability, has_capability, is_site_admin, require, role_name, roles_of


def _project_for(user, slug: str, capability: Capability = Capability.VIEW) -> Project:
    """A project the user belongs to (any project for a site admin), else 404; then 403 unless
    their role there has `capability`."""
    project = get_object_or_404(Project.objects.where(user), slug=slug)
    require(user, capability, project)
    return project


def _projects(user) -> list:
    """(project, the user's roles there by name, in the reader's language) for every project they see."""
    return [(p, [role_name(r) for r in sorted(roles_of(user, p))]) for p in Project.objects.where(user)]


def project_list(request):
    form = ProjectForm() if is_site_admin(request.user) else None
    return render(
        request, "projects/project_list.html", {"nav": "projects", "projects": _projects(request.user), "form": form}
    )


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
            messages.success(request, _("Project %(project)s made; add its members here.") % {"project": project.name})
            return redirect("projects:detail", project.slug)
    context = {"nav": "projects", "projects": _projects(request.user), "form": form}
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
    said = {"user": user.get_username(), "role": role_name(role), "project": project.name}
    if membership.add_member(project, user, role, actor=request.user, ip=client_address(request)):
        messages.success(request, _("%(user)s is now %(role)s in %(project)s.") % said)
    else:
        messages.info(request, _("%(user)s already was %(role)s in %(project)s.") % said)
    return redirect("projects:detail", project.slug)


@require_POST
def member_remove(request, slug, membership_id):
    project = _project_for(request.user, slug, Capability.MANAGE_MEMBERS)
    found = get_object_or_404(Membership.objects.select_related("user"), pk=membership_id, project=project)
    membership.remove_member(project, found.user, found.role, actor=request.user, ip=client_address(request))
    said = {"user": found.user.get_username(), "role": found.role_name, "project": project.name}
    messages.success(request, _("%(user)s is no longer %(role)s in %(project)s.") % said)
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
    said = _("MLflow tracking is on for %(project)s.") if on else _("MLflow tracking is off for %(project)s.")
    messages.success(request, said % {"project": project.name})
    return redirect("projects:detail", project.slug)
