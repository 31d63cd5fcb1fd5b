"""A corpus de-identified into a new one by a REAL Celery worker (queue "default") on PostgreSQL
and Redis: the job's progress shows as it goes (notes_done of notes_total), a cancel stops it
between batches with what was copied kept, and Resume goes on to the end with every note copied
exactly once, its annotations carried; the worker's log holds no identifier."""

import pytest

from tests.webapp.deid.conftest import FIRST, IDENTIFIERS, METADATA, NAME
from tests.workers.conftest import wait_for
from webapp.corpus.models import Annotation, Corpus, Note, text_hash
from webapp.deid.models import DeidJob
from webapp.deid_ops import jobs
from webapp.lifecycle.status import ENDED, JobStatus

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NOTES = 240
AFTER = (FIRST.index("tachicardia"), FIRST.index("tachicardia") + len("tachicardia"))


def test_a_worker_deidentifies_a_corpus_with_progress_cancel_and_resume(
    start_worker, project, policy, tachycardia, researcher
):
    source = Corpus.objects.create(project=project, name="ward", language="it")
    texts = [f"{FIRST} Nota {i}." for i in range(NOTES)]
    notes = Note.objects.bulk_create(
        Note(corpus=source, external_id=f"n{i:04d}", text=text, content_hash=text_hash(text), metadata=METADATA)
        for i, text in enumerate(texts)
    )
    Annotation.objects.bulk_create(
        Annotation(note=note, task=tachycardia, label="y", evidence=[list(AFTER)], annotator_name="gold")
        for note in notes
    )
    worker = start_worker("default", DEID_BATCH=4, WORK_HEARTBEAT_SECONDS=0.2)
    job = jobs.launch_deidentify(source, actor=researcher)

    def state():
        return DeidJob.objects.get(pk=job.pk)

    wait_for(lambda: state().notes_done >= 12, timeout=180, interval=0.1, message="the job's progress")
    seen = state()
    assert seen.status == JobStatus.RUNNING and seen.notes_total == NOTES and 0 < seen.notes_done < NOTES
    assert jobs.cancel(seen, researcher) in (JobStatus.CANCELLING, JobStatus.CANCELLED)
    wait_for(lambda: state().status in ENDED, timeout=60, message="the cancel")
    cancelled = state()
    assert cancelled.status == JobStatus.CANCELLED, cancelled.error
    copied = Note.objects.filter(corpus=cancelled.target).count()
    assert copied == cancelled.notes_done < NOTES  # what the committed batches wrote, and their count

    assert jobs.resume(cancelled, researcher)
    wait_for(lambda: state().status in ENDED, timeout=300, message="the resumed job")
    done = state()
    assert done.status == JobStatus.DONE, done.error
    assert (done.notes_done, done.notes_total, done.attempts) == (NOTES, NOTES, 2)
    target = Note.objects.filter(corpus=done.target)
    ids = list(target.values_list("external_id", flat=True))
    assert len(ids) == len(set(ids)) == NOTES  # every note once: nothing copied twice across the resume
    assert Annotation.objects.filter(note__corpus=done.target).count() == NOTES
    sample = target.get(external_id="n0007")
    [[start, end]] = Annotation.objects.get(note=sample).evidence
    assert sample.text[start:end] == "tachicardia" and NAME not in sample.text
    assert done.counts["NAME"] == 3 * NOTES and done.counts["PHONE"] == NOTES
    log = worker.log_path.read_text(errors="replace")
    assert f"deid job {job.pk}" in log
    for value in IDENTIFIERS:
        assert value not in log, value
