"""A residual scan through REAL worker processes (queue "default") on PostgreSQL + Redis, with the
real detector: a worker SIGKILLed mid-scan loses only its open batch; another worker's sweeper
queues the scan again and that worker finishes it, every note counted once, the counts those of a
scan in one go, and no identifier value in the workers' logs or the audit rows."""

import json

import pytest

from tests.webapp.deid.conftest import FIRST, IDENTIFIERS, METADATA, SECOND
from tests.workers.conftest import wait_for
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note
from webapp.deid.models import DeidJob, DeidPolicy
from webapp.lifecycle.status import ENDED, JobStatus
from webapp.projects.models import Project

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NOTES = 150  # batches of 5: 30 batches, some seconds of the real detector


def test_a_worker_killed_mid_scan_is_replaced_and_the_scan_counts_every_note_once(start_worker):
    from webapp.deid_ops import scanning

    project = Project.objects.create(name="Killed scan", slug="killed-scan")
    DeidPolicy.objects.create(project=project, patient_field="patient_id", known_fields=["patient_name", "mrn"])
    corpus = Corpus.objects.create(project=project, name="scan-ward", language="it")
    for i in range(NOTES):
        text = (FIRST, SECOND, "FC 80, nessuna tachicardia.")[i % 3]
        Note.objects.create(corpus=corpus, external_id=f"n{i}", text=text, metadata=METADATA)
    first = start_worker("default", DEID_BATCH=5, WORK_HEARTBEAT_SECONDS=0.2)
    job = scanning.launch(corpus, actor="test")
    wait_for(
        lambda: DeidJob.objects.get(pk=job.pk).notes_done > 0, timeout=120, interval=0.05, message="the scan to count"
    )
    first.kill()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING, "the kill came after the scan ended"
    assert 0 < job.notes_done < NOTES and job.notes_done % 5 == 0  # whole batches only

    second = start_worker("default", DEID_BATCH=5)  # its sweeper finds the lost scan and queues it again
    wait_for(lambda: DeidJob.objects.get(pk=job.pk).status in ENDED, timeout=240, message="the scan")
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    assert job.attempts == 2 and (job.notes_done, job.notes_total) == (NOTES, NOTES)
    assert job.notes_with_findings == 2 * NOTES // 3

    # the same counts as one scan in this process, of every note once
    scanner = scanning.Scanner(project, "it")
    for text, metadata in corpus.notes.values_list("text", "metadata"):
        scanner.scan([text], metadata)
    assert job.counts == scanning.sorted_counts(scanner.counts)

    event = AuditEvent.objects.get(action=AuditEvent.Action.DEID_SCAN)
    assert event.details["counts"] == job.counts
    said = first.log() + second.log() + json.dumps(list(AuditEvent.objects.values("details")))
    for value in IDENTIFIERS:
        assert value not in said, value
