"""Fetch objects for views through the access layer (webapp.projects.scoping): 404 for what does
not exist or belongs to a project the user is not in, 403 for what their role there may not do."""

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404

from webapp.corpus.models import Corpus, ImportJob, Note, Task
from webapp.corpus.tasks import manageable_tasks
from webapp.projects.models import Project
from webapp.projects.roles import Capability, is_site_admin
from webapp.projects.scoping import get_or_404


def corpus_for(user, corpus_id: int, capability: Capability = Capability.VIEW) -> Corpus:
    return get_or_404(user, Corpus.objects.select_related("project"), capability, pk=corpus_id)


def note_for(user, corpus_id: int, note_id: int, capability: Capability = Capability.VIEW) -> Note:
    return get_or_404(user, Note.objects.select_related("corpus"), capability, pk=note_id, corpus_id=corpus_id)


def import_job_for(user, job_id: int) -> ImportJob:
    return get_or_404(user, ImportJob.objects.select_related("created_by", "project"), Capability.IMPORT, pk=job_id)


def task_for(user, task_id: int, capability: Capability = Capability.MANAGE_TASKS) -> Task:
    """A task to read or, with MANAGE_TASKS, to edit or retire: a project's own task by that
    project's researchers and admins; a catalog task (of no project) by them for their project
    only (`adopting_project`), the catalog itself by site admins."""
    return get_or_404(user, manageable_tasks(), capability, pk=task_id)


class ProjectNotChosen(ValueError):
    """A user who manages tasks in several projects named none."""


def adopting_project(user, chosen) -> Project:
    """The project a researcher retires a catalog task in or writes its guideline for: `chosen` (a
    project id from the form) among the projects where they manage tasks, 404 for any other; none
    chosen: their only such project (ProjectNotChosen when they have several, PermissionDenied when
    none)."""
    projects = Project.objects.where(user, Capability.MANAGE_TASKS)
    if chosen not in (None, ""):
        try:
            return get_object_or_404(projects, pk=int(chosen))
        except (TypeError, ValueError):
            raise Http404("No such project.") from None
    found = list(projects[:2])
    if not found:
        raise PermissionDenied("Your role does not allow: manage_tasks")
    if len(found) > 1:
        raise ProjectNotChosen("Choose the project this change is for.")
    return found[0]


def changes_the_catalog(user, task: Task, chosen) -> bool:
    """True when a change to `task` is the catalog's own: a catalog task, by a site admin who named
    no project. A project's member changing a catalog task changes it for their project."""
    return task.project_id is None and is_site_admin(user) and chosen in (None, "")


class CorpusNotFound(ValueError):
    """No corpus of that name (in that project), or one in several projects and none named."""


def corpus_named(name: str, project=None) -> Corpus:
    """The corpus a command or an experiment file names (site-wide reach, no user). Names are unique
    within a project: `project` (a Project, its id or its slug) picks one when the name is in several
    projects. Raises CorpusNotFound with a message saying what to do."""
    found = Corpus.objects.filter(name=name)
    if project is not None and project != "":
        if isinstance(project, str):
            found = found.filter(project__slug=project)
        else:
            found = found.filter(project_id=getattr(project, "pk", project))
    found = list(found[:2])
    if not found:
        where = f" in project {getattr(project, 'slug', project)!r}" if project not in (None, "") else ""
        raise CorpusNotFound(f"no corpus named {name!r}{where}")
    if len(found) > 1:
        raise CorpusNotFound(f"a corpus named {name!r} is in several projects: name the project (--project SLUG)")
    return found[0]
