"""Planning, launch, cancel, resume and the job's derived status (webapp.pipeline.jobs)."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from ml.masking import sample_tasks
from tests.webapp.pipeline.factories import spec
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.pipeline import chunks, jobs
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob

Chunk = RelevanceChunk.Status


def planned_pairs(job):
    return [tuple(pair) for chunk in job.chunks.order_by("index") for pair in chunk.pairs]


def test_a_job_plans_every_note_with_every_listed_task_in_chunks(launched, corpus, tasks):
    job = launched()
    notes = list(Note.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))
    task_ids = [t.pk for t in sorted(tasks, key=lambda t: t.slug)]
    assert planned_pairs(job) == [(n, t) for n in notes for t in task_ids]
    assert job.total == 24 and RelevanceJob.objects.get(pk=job.pk).total == 24
    assert list(job.chunks.order_by("index").values_list("size", flat=True)) == [4] * 6
    assert job.status == JobStatus.QUEUED and job.done == 0


def test_the_last_chunk_holds_the_remainder(launched):
    job = launched(chunk_size=5)
    assert list(job.chunks.order_by("index").values_list("size", flat=True)) == [5, 5, 5, 5, 4]


def test_a_sampled_job_gives_each_note_the_papers_k_of_n_tasks_deterministically(launched, corpus, tasks):
    job = launched(task_selection="sample", tasks=[], sample_k=2, seed=7)
    slug_of = {t.pk: t.slug for t in tasks}
    by_note = {}
    for note_id, task_id in planned_pairs(job):
        by_note.setdefault(note_id, []).append(slug_of[task_id])
    for note in Note.objects.filter(corpus=corpus):
        assert by_note[note.pk] == sample_tasks(note.external_id, sorted(slug_of.values()), k=2, seed=7)
    assert planned_pairs(launched(task_selection="sample", tasks=[], sample_k=2, seed=7)) == planned_pairs(job)
    assert job.total == 12


def test_held_out_tasks_stay_out_of_the_pool_unless_asked(launched, tasks):
    tasks[0].held_out = True
    tasks[0].save()
    assert tasks[0].pk not in {t for _, t in planned_pairs(launched(task_selection="all", tasks=[]))}
    assert tasks[0].pk in {t for _, t in planned_pairs(launched(task_selection="all", tasks=[], include_held_out=True))}


@pytest.mark.parametrize("note_filter, expected", [
    ({"limit": 2}, ["n000", "n001"]),
    ({"external_ids": ["n004", "n001"]}, ["n001", "n004"]),
    ({"external_ids": ["n004", "n001", "n002"], "limit": 2}, ["n001", "n002"]),
])
def test_a_note_filter_chooses_the_notes(launched, note_filter, expected):
    job = launched(note_filter=note_filter, tasks=[], task_selection="all")
    note_ids = {n for n, _ in planned_pairs(job)}
    assert sorted(Note.objects.filter(pk__in=note_ids).values_list("external_id", flat=True)) == expected


def test_notes_chosen_by_database_id(launched, corpus):
    wanted = list(Note.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))[1:3]
    assert {n for n, _ in planned_pairs(launched(note_filter={"ids": wanted}))} == set(wanted)


def test_planning_walks_notes_by_keyset_and_never_reads_their_text(launched, monkeypatch):
    monkeypatch.setattr(jobs, "NOTE_BATCH", 2)
    with CaptureQueriesContext(connection) as queries:
        job = launched()
    note_selects = [q["sql"] for q in queries if 'FROM "corpus_note"' in q["sql"] and q["sql"].startswith("SELECT")]
    assert len(note_selects) >= 3  # 6 notes, 2 per query
    assert not any('"corpus_note"."text"' in sql for sql in note_selects)
    assert job.total == 24


def test_launch_is_audited(launched, researcher):
    job = launched()
    event = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB)
    assert (event.actor, event.object_id, event.details["prompts"]) == (researcher, str(job.pk), 24)


def test_chunks_are_enqueued_only_after_the_commit(launched, monkeypatch, django_capture_on_commit_callbacks):
    from workers.celery_app import app

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **kw: sent.append((name, args[0], kw.get("queue"))))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = launched()
        assert sent == []
    assert len(callbacks) == 1
    assert [chunk_id for _, chunk_id, _ in sent] == list(job.chunks.order_by("pk").values_list("pk", flat=True))
    assert {name for name, _, _ in sent} == {"workers.relevance.run_chunk"}


def test_the_relevance_task_is_routed_to_the_relevance_queue():
    from workers.celery_app import app

    route = app.amqp.router.route({}, "workers.relevance.run_chunk")
    assert route["queue"].name == "relevance"


def test_a_broker_that_cannot_be_reached_is_reported_on_the_job(launched, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    from workers.celery_app import app

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("no broker")

    monkeypatch.setattr(app, "send_task", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        job = launched()
    job.refresh_from_db()
    assert "could not be reached" in job.error and "Resume" in job.error


@pytest.mark.parametrize("changes, field, words", [
    ({"task_selection": "sample", "tasks": [], "sample_k": 5}, "sample_k", "between 1 and 4"),
    ({"task_selection": "sample", "tasks": [], "sample_k": 0}, "sample_k", "between 1 and 4"),
    ({"template": "{note} is observed"}, "template", "{note} and {task}"),
    ({"chunk_size": 0}, "chunk_size", "between 1 and"),
    ({"task_selection": "list", "tasks": []}, "tasks", "at least one task"),
    ({"note_filter": {"external_ids": ["nope"]}}, "note_filter", "No note"),
    ({"note_filter": {"where": "x"}}, "note_filter", "Unknown note selection"),
    ({"method": "magic"}, "method", "Unknown method"),
])
def test_a_spec_that_cannot_run_is_refused_in_plain_words(corpus, tasks, model_version, changes, field, words):
    problems = spec(corpus, model_version, **{"tasks": tasks, **changes}).problems()
    assert words in problems[field]
    with pytest.raises(jobs.JobError):
        jobs.launch(spec(corpus, model_version, **{"tasks": tasks, **changes}))
    assert not RelevanceJob.objects.exists()


def test_a_custom_template_equal_to_a_built_in_one_is_stored_by_name(launched):
    from ml.prompts import EN

    assert launched(template=EN).template == "en"
    assert launched(template="{note}\nIn this patient: {task}").template == "{note}\nIn this patient: {task}"


def finish_all(job, status=Chunk.DONE):
    job.chunks.update(status=status, seconds=1.0)
    jobs.settle(job.pk)
    job.refresh_from_db()
    return job


def test_settle_derives_done_from_the_chunks_and_ends_the_job(launched):
    job = launched()
    job.chunks.filter(index__lt=2).update(status=Chunk.DONE)
    RelevanceJob.objects.filter(pk=job.pk).update(done=3, status=JobStatus.RUNNING)  # wrong on purpose
    jobs.settle(job.pk)
    job.refresh_from_db()
    assert (job.done, job.status) == (8, JobStatus.RUNNING)
    job = finish_all(job)
    assert (job.done, job.status) == (24, JobStatus.DONE) and job.finished is not None


def test_a_job_with_failed_chunks_ends_failed_and_says_so(launched):
    job = launched()
    job.chunks.update(status=Chunk.DONE)
    job.chunks.filter(index=3).update(status=Chunk.FAILED, error="boom")
    jobs.settle(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.done == 20
    assert "1 of 6 chunks failed" in job.error


def test_cancel_skips_the_waiting_chunks_and_ends_when_none_runs(launched, researcher,
                                                                 django_capture_on_commit_callbacks):
    job = launched()
    job.chunks.filter(index=0).update(status=Chunk.DONE)
    job.chunks.filter(index=1).update(status=Chunk.RUNNING)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.cancel(job, actor=researcher)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLING  # chunk 1 is still running
    assert job.chunks.filter(status=Chunk.SKIPPED).count() == 4
    RelevanceChunk.objects.filter(job=job, index=1).update(status=Chunk.DONE)
    jobs.settle(job.pk)
    job.refresh_from_db()
    assert (job.status, job.done) == (JobStatus.CANCELLED, 8)
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB, object_id=str(job.pk)).exists()


def test_a_cancelled_job_whose_chunks_all_finished_is_done(launched, django_capture_on_commit_callbacks):
    job = launched()
    job.chunks.update(status=Chunk.DONE)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.cancel(job)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE


def test_only_a_queued_or_running_job_can_be_cancelled(launched):
    job = finish_all(launched())
    with pytest.raises(jobs.JobError, match="this one is done"):
        jobs.cancel(job)


def test_resume_runs_again_every_chunk_that_is_not_done(launched, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(jobs, "enqueue_pending", lambda job_id: sent.append(
        sorted(RelevanceChunk.objects.filter(job_id=job_id, status=Chunk.PENDING).values_list("index", flat=True))))
    job = launched()
    job.chunks.filter(index__in=[0, 1]).update(status=Chunk.DONE)
    job.chunks.filter(index=2).update(status=Chunk.FAILED, attempts=3, error="boom")
    job.chunks.filter(index__gt=2).update(status=Chunk.SKIPPED)
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    job.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.resume(job) == 4
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.error == "" and job.done == 8
    assert sent == [[2, 3, 4, 5]]
    assert set(job.chunks.filter(status=Chunk.PENDING).values_list("attempts", "error")) == {(0, "")}
    assert AuditEvent.objects.filter(action=AuditEvent.Action.LAUNCH_JOB, details__resumed=True).exists()


def test_a_running_job_is_resumed_only_once_stalled(launched, django_capture_on_commit_callbacks, monkeypatch):
    monkeypatch.setattr(jobs, "enqueue_pending", lambda job_id: 0)
    job = launched()
    job.chunks.filter(index=0).update(status=Chunk.RUNNING, started=timezone.now())
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    job.refresh_from_db()
    assert not jobs.can_resume(job)
    with pytest.raises(jobs.JobError, match="still making progress"):
        jobs.resume(job)
    long_ago = timezone.now() - timedelta(seconds=jobs.STALL_SECONDS + 60)
    RelevanceJob.objects.filter(pk=job.pk).update(created=long_ago, started=long_ago)
    job.chunks.filter(index=0).update(started=long_ago)
    job.refresh_from_db()
    assert jobs.can_resume(job)
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.resume(job) == 6  # the stale running chunk and the five pending ones
    assert not job.chunks.filter(status=Chunk.RUNNING).exists()


def test_a_done_job_has_nothing_to_resume(launched):
    job = finish_all(launched())
    assert not jobs.can_resume(job)
    with pytest.raises(jobs.JobError, match="nothing to resume"):
        jobs.resume(job)


def test_claim_takes_a_pending_chunk_and_starts_the_job(launched):
    job = launched()
    chunk = job.chunks.get(index=0)
    claimed = chunks.claim(chunk.pk, worker="w1@host")
    chunk.refresh_from_db()
    job.refresh_from_db()
    assert claimed.pk == chunk.pk
    assert (chunk.status, chunk.attempts, chunk.worker) == (Chunk.RUNNING, 1, "w1@host")
    assert job.status == JobStatus.RUNNING and job.started is not None


def test_claim_takes_a_running_chunk_again_a_redelivery(launched):
    chunk = launched().chunks.get(index=0)
    chunks.claim(chunk.pk)
    assert chunks.claim(chunk.pk) is not None
    chunk.refresh_from_db()
    assert chunk.attempts == 2


@pytest.mark.parametrize("status", [Chunk.DONE, Chunk.SKIPPED, Chunk.FAILED])
def test_claim_leaves_a_finished_chunk_alone(launched, status):
    chunk = launched().chunks.get(index=0)
    RelevanceChunk.objects.filter(pk=chunk.pk).update(status=status)
    assert chunks.claim(chunk.pk) is None
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == (status, 0)


def test_claim_of_a_chunk_that_no_longer_exists_is_harmless(db):
    assert chunks.claim(10**9) is None


def test_claim_skips_the_chunks_of_a_cancelling_job(launched):
    job = launched()
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLING)
    job.chunks.exclude(index=0).update(status=Chunk.SKIPPED)
    assert chunks.claim(job.chunks.get(index=0).pk) is None
    job.refresh_from_db()
    assert job.chunks.get(index=0).status == Chunk.SKIPPED
    assert job.status == JobStatus.CANCELLED


def test_a_chunk_whose_worker_keeps_dying_fails_after_the_last_attempt(launched):
    job = launched()
    chunk = job.chunks.get(index=0)
    RelevanceChunk.objects.filter(pk=chunk.pk).update(status=Chunk.RUNNING, attempts=chunks.MAX_ATTEMPTS)
    assert chunks.claim(chunk.pk) is None
    chunk.refresh_from_db()
    assert chunk.status == Chunk.FAILED and "Gave up after" in chunk.error


def test_a_failure_message_never_quotes_a_note(launched, corpus):
    chunk = launched().chunks.get(index=0)
    note = Note.objects.get(pk=chunk.pairs[0][0])
    leaked = ValueError(f"cannot parse {note.text[5:60]!r}")
    message = chunks.failure_message(leaked, chunk)
    assert note.text[5:30] not in message and "ValueError" in message
    assert "tokenizer exploded" in chunks.failure_message(RuntimeError("tokenizer exploded"), chunk)
