"""Fetch objects for views: 404 for what does not exist, 403 for what the role may not do."""

from django.shortcuts import get_object_or_404

from webapp.accounts.roles import Capability, require
from webapp.corpus.models import Corpus, ImportJob, Note, Task
from webapp.corpus.tasks import manageable_tasks


def corpus_for(user, corpus_id: int, capability: Capability = Capability.VIEW) -> Corpus:
    require(user, capability)
    return get_object_or_404(Corpus, pk=corpus_id)


def note_for(user, corpus_id: int, note_id: int) -> Note:
    require(user, Capability.VIEW)
    return get_object_or_404(Note.objects.select_related("corpus"), pk=note_id, corpus_id=corpus_id)


def import_job_for(user, job_id: int) -> ImportJob:
    require(user, Capability.IMPORT)
    return get_object_or_404(ImportJob.objects.select_related("created_by"), pk=job_id)


def task_for(user, task_id: int, capability: Capability = Capability.MANAGE_TASKS) -> Task:
    require(user, capability)
    return get_object_or_404(manageable_tasks(), pk=task_id)
