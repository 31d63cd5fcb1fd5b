"""Fetch objects for views through the access layer (webapp.projects.scoping): 404 for what does
not exist or belongs to a project the user is not in, 403 for what their role there may not do."""

from webapp.accounts.roles import Capability
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
    return get_or_404(user, manageable_tasks(), capability, pk=task_id)
