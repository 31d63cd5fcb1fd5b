"""An erasure through REAL worker processes (queue "default") on PostgreSQL + Redis: a worker
SIGKILLed mid-erasure loses only its open batch; another worker's sweeper queues the request
again and that worker finishes it, every table's count as planned, nothing counted twice."""

import pytest

from tests.webapp.datasets.fabricate import add_notes_with_maps
from tests.webapp.erasure.world import every_table
from tests.workers.conftest import wait_for
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, Task
from webapp.erasure import erasing
from webapp.erasure.models import ErasureRequest
from webapp.lifecycle.status import ENDED, JobStatus
from webapp.pipeline.models import ModelVersion, RelevanceMap
from webapp.projects.models import Project

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NOTES = 2_000  # with 3 maps each and batches of 25 rows: some 500 batches, seconds of work


def test_a_worker_killed_mid_erasure_is_replaced_and_the_erasure_ends_whole(start_worker):
    project = Project.objects.create(name="Killed erasure", slug="killed-erasure")
    corpus = Corpus.objects.create(project=project, name="bulk-ward", language="en")
    model = ModelVersion.objects.create(name="tiny-erase", family="llama", path="tiny-erase")
    tasks = {
        slug: Task.objects.create(slug=f"k-{slug}", description=f"k {slug}", options=["y", "n"], project=project)
        for slug in ("heart", "pacemaker", "pressure")
    }
    add_notes_with_maps(corpus, tasks, model, NOTES)
    before = every_table()

    first = start_worker("default", ERASURE_BATCH=25, WORK_HEARTBEAT_SECONDS=0.2)
    erasure = erasing.request(project, ErasureRequest.Scope.CORPUS, corpus=corpus, actor="test")
    wait_for(
        lambda: ErasureRequest.objects.get(pk=erasure.pk).erased.get("pipeline.RelevanceMap", 0) > 0,
        timeout=120,
        interval=0.05,
        message="the erasure to be deleting maps",
    )
    first.kill()
    erasure.refresh_from_db()
    assert erasure.status == JobStatus.RUNNING, "the kill came after the erasure ended"
    assert 0 < erasure.erased["pipeline.RelevanceMap"] < 3 * NOTES
    assert (
        RelevanceMap.objects.filter(note__corpus=corpus).count() == 3 * NOTES - erasure.erased["pipeline.RelevanceMap"]
    )

    start_worker("default", ERASURE_BATCH=25)  # its sweeper finds the lost erasure and queues it again
    wait_for(lambda: ErasureRequest.objects.get(pk=erasure.pk).status in ENDED, timeout=180, message="the erasure")
    erasure.refresh_from_db()
    assert erasure.status == JobStatus.DONE, erasure.error
    assert erasure.attempts == 2
    assert {k: v for k, v in erasure.erased.items() if not k.startswith("files")} == erasure.planned["tables"]
    after = every_table()
    for table, rows in erasure.planned["tables"].items():
        assert before[table] - after[table] == rows, table
    assert not Note.objects.filter(corpus_id=corpus.pk).exists() and not Corpus.objects.filter(pk=corpus.pk).exists()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.ERASURE, details__erasure=erasure.pk).count() == 1
