"""Fetch objects for views through the access layer (webapp.projects.scoping): 404 for what does
not exist or belongs to a project the user is not in, 403 for what their role there may not do."""

from django.core.exceptions import PermissionDenied

from webapp.accounts.roles import Capability, is_site_admin
from webapp.corpus.models import Corpus, ImportJob, Note, Task
from webapp.corpus.tasks import manageable_tasks
from webapp.projects.scoping import get_or_404


def corpus_for(user, corpus_id: int, capability: Capability = Capability.VIEW) -> Corpus:
    return get_or_404(user, Corpus.objects.select_related("project"), capability, pk=corpus_id)


def note_for(user, corpus_id: int, note_id: int, capability: Capability = Capability.VIEW) -> Note:
    return get_or_404(user, Note.objects.select_related("corpus"), capability, pk=note_id, corpus_id=corpus_id)


def import_job_for(user, job_id: int) -> ImportJob:
    return get_or_404(user, ImportJob.objects.select_related("created_by", "project"), Capability.IMPORT, pk=job_id)


def task_for(user, task_id: int, capability: Capability = Capability.MANAGE_TASKS) -> Task:
    """A task to read or, with MANAGE_TASKS, to edit or retire: a project's own task by that
    project's researchers and admins; the shared catalog (a task of no project) by site admins
    only, since every project's reviewers work under its state and guideline (403 otherwise)."""
    task = get_or_404(user, manageable_tasks(), capability, pk=task_id)
    if capability == Capability.MANAGE_TASKS and task.project_id is None and not is_site_admin(user):
        raise PermissionDenied("Only a site admin changes the shared task catalog.")
    return task


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
