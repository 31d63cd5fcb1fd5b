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
from webapp.pipeline import chunks, jobs, planning
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


@pytest.mark.parametrize(
    "note_filter, expected",
    [
        ({"limit": 2}, ["n000", "n001"]),
        ({"external_ids": ["n004", "n001"]}, ["n001", "n004"]),
        ({"external_ids": ["n004", "n001", "n002"], "limit": 2}, ["n001", "n002"]),
    ],
)
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
    assert (event.actor, event.object_id, event.details["task_selection"]) == (researcher, str(job.pk), "list")


def test_notes_chosen_by_external_id_are_audited_by_their_row_ids(launched, corpus):
    """A site's external ids may be record numbers: the audit log names the notes by row id."""
    launched(note_filter={"external_ids": ["n004", "n001"], "limit": 2}, tasks=[], task_selection="all")
    event = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB)
    wanted = sorted(Note.objects.filter(corpus=corpus, external_id__in=["n001", "n004"]).values_list("pk", flat=True))
    assert event.details["note_filter"] == {"limit": 2, "external_ids_as_note_ids": wanted}
    assert "n00" not in str(event.details)


def test_launch_answers_before_planning_and_sends_the_job_to_a_planner_after_the_commit(
    corpus, tasks, model_version, monkeypatch, django_capture_on_commit_callbacks
):
    from webapp.taskqueue import app

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **kw: sent.append((name, args[0])))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = jobs.launch(spec(corpus, model_version, tasks=tasks))
        assert sent == []
    assert len(callbacks) == 1
    job.refresh_from_db()
    assert (job.status, job.total, job.chunks.count()) == (JobStatus.PLANNING, 0, 0)  # nothing planned here
    assert sent == [("workers.relevance.plan_job", job.pk)]


def test_the_planner_queues_the_job_and_sends_every_chunk(corpus, tasks, model_version, monkeypatch):
    from webapp.taskqueue import app

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **kw: sent.append((name, args[0])))
    job = jobs.launch(spec(corpus, model_version, tasks=tasks), enqueue=False)
    assert planning.plan_now(job, enqueue=True) == 24
    job.refresh_from_db()
    assert (job.status, job.total, job.chunk_count, job.notes_planned, job.notes_total) == (
        JobStatus.QUEUED,
        24,
        6,
        6,
        6,
    )
    assert [chunk_id for _, chunk_id in sent] == list(job.chunks.order_by("pk").values_list("pk", flat=True))
    assert {name for name, _ in sent} == {"workers.relevance.run_chunk"}


def test_a_planner_taken_over_plans_from_nothing_and_writes_no_chunk_twice(corpus, tasks, model_version):
    job = jobs.launch(spec(corpus, model_version, tasks=tasks), enqueue=False)
    first = planning.claim(job.pk, "lost-planner")
    RelevanceChunk.objects.create(job=job, index=0, pairs=[[1, 1]], size=1)  # its partial plan
    long_ago = timezone.now() - timedelta(seconds=120)
    RelevanceJob.objects.filter(pk=job.pk).update(heartbeat=long_ago)
    assert planning.claim(job.pk, "second") is not None  # the first planner's heartbeat is stale
    assert planning.claim(job.pk, "third") is None  # the second one beats: nobody else takes it
    second = RelevanceJob.objects.get(pk=job.pk)

    class Heart:
        lost = False

        def report(self, **fields):
            pass

    assert planning.plan(second, Heart(), enqueue=False) == 24
    assert planning.plan(first, Heart(), enqueue=False) == 0  # the lost planner may not queue the job
    assert sorted(job.chunks.values_list("index", flat=True)) == list(range(6))


def test_cancelling_a_job_being_planned_ends_it_at_once(corpus, tasks, model_version):
    job = jobs.launch(spec(corpus, model_version, tasks=tasks), enqueue=False)
    jobs.cancel(job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    with pytest.raises(planning.PlanError):
        planning.plan_now(job)


def test_the_planning_task_is_routed_to_the_default_queue_and_chunks_to_relevance():
    from webapp.lifecycle.queue import queue_of
    from webapp.taskqueue import app

    assert app.amqp.router.route({}, "workers.relevance.run_chunk")["queue"].name == "relevance"
    assert app.amqp.router.route({}, "workers.relevance.plan_job")["queue"].name == "default"
    assert (queue_of("workers.relevance.run_chunk"), queue_of("workers.relevance.plan_job")) == ("relevance", "default")


def test_a_broker_that_cannot_be_reached_is_reported_on_the_job(
    launched, monkeypatch, django_capture_on_commit_callbacks
):
    from webapp.taskqueue import app

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("no broker")

    monkeypatch.setattr(app, "send_task", refuse)
    job = launched()
    assert jobs.enqueue_chunks(job.pk) == 0
    job.refresh_from_db()
    assert "could not be reached" in job.error and "Resume" in job.error


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"task_selection": "sample", "tasks": [], "sample_k": 5}, "sample_k", "between 1 and 4"),
        ({"task_selection": "sample", "tasks": [], "sample_k": 0}, "sample_k", "between 1 and 4"),
        ({"template": "{note} is observed"}, "template", "{note} and {task}"),
        ({"chunk_size": 0}, "chunk_size", "between 1 and"),
        ({"task_selection": "list", "tasks": []}, "tasks", "at least one task"),
        ({"note_filter": {"external_ids": ["nope"]}}, "note_filter", "No note"),
        ({"note_filter": {"where": "x"}}, "note_filter", "Unknown note selection"),
        ({"method": "magic"}, "method", "Unknown method"),
    ],
)
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


def end_chunk(job, index, status=Chunk.DONE, seconds=1.0):
    """Claim the chunk as a worker would and end it with `status`."""
    chunk = chunks.claim(job.chunks.get(index=index).pk, worker="w")
    assert chunk is not None
    if status == Chunk.DONE:
        assert chunks.finish(chunk, seconds, chunks.Outcome())
    else:
        assert chunks.fail(chunk, "boom")
    return chunk


def finish_all(job):
    for index in job.chunks.filter(status=Chunk.QUEUED).values_list("index", flat=True):
        end_chunk(job, index)
    job.refresh_from_db()
    return job


def test_each_ended_chunk_counts_on_the_job_and_the_last_one_ends_it(launched):
    job = launched()
    end_chunk(job, 0)
    end_chunk(job, 1)
    job.refresh_from_db()
    assert (job.done, job.chunks_done, job.status) == (8, 2, JobStatus.RUNNING)
    job = finish_all(job)
    assert (job.done, job.chunks_done, job.seconds_done, job.status) == (24, 6, 6.0, JobStatus.DONE)
    assert job.finished is not None


def test_a_chunk_ended_twice_counts_once(launched):
    job = launched()
    chunk = end_chunk(job, 0)
    assert not chunks.finish(chunk, 1.0, chunks.Outcome())  # a duplicate end (another attempt's, or a retry)
    job.refresh_from_db()
    assert (job.done, job.chunks_done) == (4, 1)


def test_finishing_a_chunk_never_sums_over_the_jobs_chunks(launched):
    job = launched()
    chunk = chunks.claim(job.chunks.get(index=0).pk, worker="w")
    with CaptureQueriesContext(connection) as queries:
        chunks.finish(chunk, 1.0, chunks.Outcome())
    assert not any("SUM(" in q["sql"].upper() or "COUNT(" in q["sql"].upper() for q in queries)


def test_a_job_with_failed_chunks_ends_failed_and_says_so(launched):
    job = launched()
    for index in range(6):
        end_chunk(job, index, Chunk.FAILED if index == 3 else Chunk.DONE)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.done == 20
    assert "1 of 6 chunks failed" in job.error


def test_cancel_skips_the_waiting_chunks_and_ends_when_none_runs(
    launched, researcher, django_capture_on_commit_callbacks
):
    job = launched()
    end_chunk(job, 0)
    running = chunks.claim(job.chunks.get(index=1).pk, worker="w")
    with django_capture_on_commit_callbacks(execute=True):
        jobs.cancel(job, actor=researcher)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLING  # chunk 1 is still running
    assert job.chunks.filter(status=Chunk.CANCELLED).count() == 4 == job.chunks_cancelled
    chunks.finish(running, 1.0, chunks.Outcome())
    job.refresh_from_db()
    assert (job.status, job.done) == (JobStatus.CANCELLED, 8)
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB, object_id=str(job.pk)).exists()


def test_a_cancelled_job_whose_chunks_all_finished_is_done(launched, django_capture_on_commit_callbacks):
    job = launched()
    for index in range(5):
        end_chunk(job, index)
    last = chunks.claim(job.chunks.get(index=5).pk, worker="w")
    with django_capture_on_commit_callbacks(execute=True):
        jobs.cancel(job)
    chunks.finish(last, 1.0, chunks.Outcome())
    job.refresh_from_db()
    assert job.status == JobStatus.DONE


def test_only_a_queued_or_running_job_can_be_cancelled(launched):
    job = finish_all(launched())
    with pytest.raises(jobs.JobError, match="this one is done"):
        jobs.cancel(job)


def test_resume_runs_again_every_chunk_that_is_not_done(launched, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(
        jobs,
        "send_chunks",
        lambda job_id, ids: sent.append(
            sorted(RelevanceChunk.objects.filter(pk__in=ids).values_list("index", flat=True))
        ),
    )
    job = launched()
    end_chunk(job, 0)
    end_chunk(job, 1)
    end_chunk(job, 2, Chunk.FAILED)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.cancel(job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.resume(job) == 4
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.error == "" and job.done == 8
    assert (job.chunks_done, job.chunks_failed, job.chunks_cancelled) == (2, 0, 0)
    assert sent == [[2, 3, 4, 5]]
    assert set(job.chunks.filter(status=Chunk.QUEUED).values_list("error", flat=True)) == {""}
    assert job.chunks.get(index=2).attempts == 1  # attempts never go back: a late worker of attempt 1 stays out
    assert AuditEvent.objects.filter(action=AuditEvent.Action.LAUNCH_JOB, details__resumed=True).exists()
    finish_all(job)
    job.refresh_from_db()
    assert (job.status, job.done, job.chunks_done) == (JobStatus.DONE, 24, 6)


def test_a_running_job_is_resumed_only_once_a_worker_is_lost(launched, django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr(jobs, "send_chunks", lambda job_id, ids: sent.extend(ids))
    job = launched()
    chunks.claim(job.chunks.get(index=0).pk, worker="w")
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and not jobs.can_resume(job)
    assert job.status_text() == "Running"
    with pytest.raises(jobs.JobError, match="workers are alive"):
        jobs.resume(job)
    lost_at = timezone.now() - timedelta(seconds=120)
    job.chunks.filter(index=0).update(heartbeat=lost_at)
    job.refresh_from_db()
    assert jobs.can_resume(job)
    assert job.status_text().startswith("stalled: worker lost at ")
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.resume(job) == 1  # the lost chunk; the five others are still queued
    assert not job.chunks.filter(status=Chunk.RUNNING).exists()
    assert sent == [job.chunks.get(index=0).pk]  # only its message: the others' still wait in the queue


def test_a_done_job_has_nothing_to_resume(launched):
    job = finish_all(launched())
    assert not jobs.can_resume(job)
    with pytest.raises(jobs.JobError, match="nothing to resume"):
        jobs.resume(job)


def test_a_job_cancelled_while_planning_is_planned_again_on_resume(
    corpus, tasks, model_version, monkeypatch, django_capture_on_commit_callbacks
):
    from webapp.taskqueue import app

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **kw: sent.append((name, args[0])))
    job = jobs.launch(spec(corpus, model_version, tasks=tasks), enqueue=False)
    jobs.cancel(job)
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.resume(job) == 0
    job.refresh_from_db()
    assert job.status == JobStatus.PLANNING and sent == [("workers.relevance.plan_job", job.pk)]
    assert planning.plan_now(job) == 24


def test_claim_takes_a_queued_chunk_and_starts_the_job(launched):
    job = launched()
    chunk = job.chunks.get(index=0)
    claimed = chunks.claim(chunk.pk, worker="w1@host")
    chunk.refresh_from_db()
    job.refresh_from_db()
    assert claimed.pk == chunk.pk
    assert (chunk.status, chunk.attempts, chunk.worker) == (Chunk.RUNNING, 1, "w1@host")
    assert job.status == JobStatus.RUNNING and job.started is not None


def test_claim_leaves_a_chunk_held_by_a_live_worker_and_takes_it_from_a_lost_one(launched):
    chunk = launched().chunks.get(index=0)
    first = chunks.claim(chunk.pk, worker="first")
    assert chunks.claim(chunk.pk, worker="second") is None  # a duplicate message: the first one beats
    RelevanceChunk.objects.filter(pk=chunk.pk).update(heartbeat=timezone.now() - timedelta(seconds=120))
    second = chunks.claim(chunk.pk, worker="second")
    assert second is not None and second.attempts == 2
    assert not chunks.finish(first, 1.0, chunks.Outcome())  # the lost worker woke up: it writes nothing
    assert chunks.finish(second, 1.0, chunks.Outcome())


@pytest.mark.parametrize("status", [Chunk.DONE, Chunk.CANCELLED, Chunk.FAILED])
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
    running = chunks.claim(job.chunks.get(index=0).pk, worker="w")
    jobs.cancel(job)
    RelevanceChunk.objects.filter(pk=running.pk).update(status=Chunk.QUEUED)  # e.g. released for a retry
    assert chunks.claim(running.pk) is None
    job.refresh_from_db()
    assert job.chunks.get(index=0).status == Chunk.CANCELLED
    assert (job.status, job.chunks_cancelled) == (JobStatus.CANCELLED, 6)


def test_a_chunk_whose_worker_keeps_dying_fails_after_the_last_attempt(launched):
    job = launched()
    chunk = job.chunks.get(index=0)
    RelevanceChunk.objects.filter(pk=chunk.pk).update(
        status=Chunk.RUNNING, attempts=chunks.MAX_ATTEMPTS, heartbeat=timezone.now() - timedelta(seconds=120)
    )
    assert chunks.claim(chunk.pk) is None
    chunk.refresh_from_db()
    job.refresh_from_db()
    assert chunk.status == Chunk.FAILED and "Gave up after" in chunk.error and job.chunks_failed == 1
    jobs.cancel(job)
    jobs.resume(job)  # a new series of attempts: the chunk is claimed again
    again = chunks.claim(chunk.pk, "w")
    assert again is not None and again.attempts == chunks.MAX_ATTEMPTS + 1


def test_a_failure_message_never_quotes_a_note(launched, corpus):
    from ml.models import ModelNotFoundError

    chunk = launched().chunks.get(index=0)
    note = Note.objects.get(pk=chunk.pairs[0][0])
    leaked = ValueError(f"cannot parse {note.text[5:60]!r}")
    message = chunks.failure_message(leaked, chunk)
    assert note.text[5:30] not in message and "ValueError" in message
    # a library's error may quote the data even in a word: its text is withheld, its type kept
    assert "exploded" not in chunks.failure_message(RuntimeError("token 'Patient' exploded"), chunk)
    # our own errors describe the system: their text is shown
    assert "is not converted" in chunks.failure_message(ModelNotFoundError("model 'x' is not converted yet"), chunk)
