"""Run lifecycle: launch (validated, audited, full config stored), cancel, resume, claim, stall."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tests.webapp.training.factories import make_dataset
from webapp.audit.models import AuditEvent
from webapp.pipeline.models import JobStatus
from webapp.training import runs, splits
from webapp.training.models import RunKind, TrainingRun
from webapp.training.runs import RunError, RunSpec


def dsm_spec(dataset, model_version, **changes):
    values = dict(
        kind=RunKind.DSM,
        preset="dsm-full",
        model_version=model_version,
        dataset=dataset,
        config={"train": {"max_steps": 3, "warmup_ratio": 0.0}},
    )
    values.update(changes)
    return RunSpec(**values)


def test_a_launch_stores_the_full_configuration_seed_and_code_version(dataset, model_version, researcher):
    config = {"train": {"seed": 7, "max_steps": 3, "warmup_ratio": 0.0}}
    run = runs.launch(dsm_spec(dataset, model_version, config=config), actor=researcher)
    run.refresh_from_db()
    assert run.status == JobStatus.QUEUED and run.kind == RunKind.DSM and run.preset == "dsm-full"
    assert run.config["train"]["lr"] == 4e-5 and run.config["train"]["max_steps"] == 3
    assert run.seed == 7 and run.code_version
    assert Path(run.output_dir).parent.name == "training" and Path(run.output_dir).name.startswith(f"run-{run.pk}-")
    event = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB, object_id=str(run.pk))
    assert event.actor == researcher and event.details["kind"] == "dsm"


def test_a_run_never_gets_a_folder_named_by_its_id_alone(dataset, model_version, settings, tmp_path):
    """Ids start again in another database sharing DATA_DIR: a folder left there by a run of the
    same id (a trained teacher, synthetic labels, a checkpoint) must never become this run's."""
    settings.DATA_DIR = tmp_path
    first = runs.launch(dsm_spec(dataset, model_version), enqueue=False)
    leftover = tmp_path / "training" / f"run-{first.pk + 1}" / "teacher" / "final"
    leftover.mkdir(parents=True)
    (leftover / "config.json").write_text("{}")
    second = runs.launch(dsm_spec(dataset, model_version), enqueue=False)
    assert second.pk == first.pk + 1
    assert first.output_dir != second.output_dir
    assert not (Path(second.output_dir) / "teacher").exists()


def test_a_labeled_run_without_a_split_makes_one_for_the_corpus(corpus, model_version):
    spec = RunSpec(kind=RunKind.HEADS, preset="ch", model_version=model_version, split_corpus=corpus, split_seed=4)
    run = runs.launch(spec)
    assert run.split.corpus == corpus and run.split.seed == 4 and run.split.test_count > 0
    again = runs.launch(
        RunSpec(kind=RunKind.SFT, preset="sft", model_version=model_version, split_corpus=corpus, split_seed=4)
    )
    assert again.split_id == run.split_id


@pytest.mark.parametrize(
    "mode, preset, words",
    [
        ("dsm", "random-mask", "built in mode Random mask"),
        ("random", "dsm-full", "built in mode DecSelfMask"),
        ("unmasked", "dsm-full", "train on it with a CPT run"),
    ],
)
def test_a_preset_refuses_a_dataset_of_another_mode(corpus, model_version, mode, preset, words):
    dataset = make_dataset(corpus, model_version, mode=mode)
    with pytest.raises(RunError, match=words):
        runs.launch(dsm_spec(dataset, model_version, preset=preset))


def test_cpt_accepts_any_finished_dataset_and_refuses_an_unfinished_one(corpus, model_version):
    masked = make_dataset(corpus, model_version, mode="dsm")
    assert runs.launch(RunSpec(kind=RunKind.CPT, preset="cpt", model_version=model_version, dataset=masked))
    building = make_dataset(corpus, model_version, mode="unmasked", status=JobStatus.RUNNING, name="b")
    with pytest.raises(RunError, match="only a finished dataset"):
        runs.launch(RunSpec(kind=RunKind.CPT, model_version=model_version, dataset=building))


def test_problems_name_the_fields(model_version):
    problems = RunSpec(
        kind=RunKind.SFT, preset="ch", model_version=model_version, config={"train": {"lr": -1}}
    ).problems()
    assert set(problems) == {"train.lr", "preset", "split"}
    assert RunSpec(kind="magic", model_version=model_version).problems() == {
        "kind": "Unknown run kind 'magic'; the kinds are dsm, cpt, sft, heads, prompting, self_learning."
    }


def test_a_queued_run_is_cancelled_at_once_and_a_running_one_is_asked_to_stop(dataset, model_version, admin_user):
    queued = runs.launch(dsm_spec(dataset, model_version))
    assert runs.cancel(queued, actor=admin_user).status == JobStatus.CANCELLED
    running = runs.launch(dsm_spec(dataset, model_version))
    runs.claim(running.pk, worker="w1")
    assert runs.cancel(running).status == JobStatus.CANCELLING
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB).count() == 2
    with pytest.raises(RunError, match="Only a queued or running run"):
        runs.cancel(TrainingRun.objects.get(pk=queued.pk))


def test_claim_takes_a_queued_run_once(dataset, model_version):
    run = runs.launch(dsm_spec(dataset, model_version))
    assert run.heartbeat  # queued: when it was sent (the recovery sweeper resends a lost message)
    claimed = runs.claim(run.pk, worker="w1")
    assert claimed.status == JobStatus.RUNNING and claimed.attempts == 1 and claimed.heartbeat
    assert claimed.status_text() == "Running" and not claimed.is_stalled
    assert runs.claim(run.pk, worker="w2") is None  # a duplicate message while w1 is alive


def test_a_running_run_with_a_stale_heartbeat_is_taken_back_by_the_next_claim(dataset, model_version, settings):
    run = runs.launch(dsm_spec(dataset, model_version))
    runs.claim(run.pk, worker="w1")
    old = timezone.now() - timedelta(seconds=settings.WORK_STALL_SECONDS + 5)
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat=old)
    again = runs.claim(run.pk, worker="w2")
    assert again.attempts == 2 and again.worker == "w2"
    # the first attempt can no longer end the run
    first = TrainingRun.objects.get(pk=run.pk)
    first.attempts = 1
    assert not runs.finish(first) and not runs.fail(first, "late")
    assert runs.finish(again)


def test_resume_requeues_a_cancelled_or_failed_run_but_not_a_live_or_done_one(dataset, model_version):
    run = runs.launch(dsm_spec(dataset, model_version))
    claimed = runs.claim(run.pk)
    with pytest.raises(RunError, match="worker is alive"):
        runs.resume(TrainingRun.objects.get(pk=run.pk))
    TrainingRun.objects.filter(pk=run.pk).update(checkpoint_step=2)
    runs.cancel(TrainingRun.objects.get(pk=run.pk))
    assert runs.cancelled(claimed)
    resumed = runs.resume(TrainingRun.objects.get(pk=run.pk))
    assert resumed.status == JobStatus.QUEUED
    assert runs.claim(run.pk).attempts == 2
    runs.finish(TrainingRun.objects.get(pk=run.pk))
    with pytest.raises(RunError, match="nothing to resume"):
        runs.resume(TrainingRun.objects.get(pk=run.pk))


def test_a_run_whose_worker_went_silent_for_the_stall_time_is_stalled_not_running(dataset, model_version, settings):
    settings.WORK_STALL_SECONDS = 60
    run = runs.launch(dsm_spec(dataset, model_version))
    runs.claim(run.pk)
    silent = timezone.now() - timedelta(seconds=61)
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat=silent, eta_s=95.0)
    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status_text() == f"stalled: worker lost at {timezone.localtime(silent):%H:%M}"
    assert run.resumable and run.time_left_s is None  # never a live ETA for a lost worker
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(seconds=59))
    assert not TrainingRun.objects.get(pk=run.pk).is_stalled


def test_a_stalled_run_can_be_resumed_and_cancelled(dataset, model_version, settings):
    run = runs.launch(dsm_spec(dataset, model_version))
    runs.claim(run.pk)
    stale = timezone.now() - timedelta(seconds=settings.WORK_STALL_SECONDS + 1)
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat=stale)
    resumed = runs.resume(TrainingRun.objects.get(pk=run.pk), enqueue=False)
    assert resumed.status == JobStatus.QUEUED and resumed.status_text() == "Queued"
    runs.claim(run.pk)
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat=stale)
    assert runs.cancel(TrainingRun.objects.get(pk=run.pk)).status == JobStatus.CANCELLED


def test_why_a_run_waited_goes_to_its_log_when_a_worker_takes_it(dataset, model_version):
    run = runs.launch(dsm_spec(dataset, model_version))
    runs.claim(run.pk, worker="w1")
    lost = "Worker w1 was lost at 10:04:05 (no heartbeat for 60 s); queued again automatically."
    TrainingRun.objects.filter(pk=run.pk).update(status=JobStatus.QUEUED, error=lost)  # what the sweeper does
    again = runs.claim(run.pk, worker="w2")
    assert again.attempts == 2 and again.error == ""
    assert list(again.logs.order_by("-id").values_list("message", flat=True)[:2]) == ["Attempt 2 started on w2.", lost]


def test_a_broker_failure_is_said_on_the_run(dataset, model_version, monkeypatch, django_capture_on_commit_callbacks):
    from webapp.taskqueue import app

    def down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(app, "send_task", down)
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.launch(dsm_spec(dataset, model_version))
    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == JobStatus.QUEUED and "could not be reached" in run.error


def test_split_problems_are_plain(corpus, model_version):
    from webapp.corpus.models import Annotation

    split, _ = splits.get_or_create_split(corpus)
    assert RunSpec(kind=RunKind.HEADS, model_version=model_version, split=split).problems() == {}
    Annotation.objects.filter(note__corpus=corpus).exclude(pk__in=split.items.values("annotation_id")).delete()
    other = RunSpec(kind=RunKind.HEADS, model_version=model_version, split_corpus=corpus, split_test_ratio=2)
    assert "between 0 and 1" in other.problems()["split_test_ratio"]


def test_self_learning_needs_an_existing_unlabeled_corpus(corpus, model_version):
    spec = RunSpec(
        kind=RunKind.SELF_LEARNING,
        preset="self-learning",
        model_version=model_version,
        split_corpus=corpus,
        config={"unlabeled": {"corpus": "nowhere"}},
    )
    refused = {"unlabeled.corpus": "There is no corpus 'nowhere' in this project to take unlabeled notes from."}
    assert spec.problems() == refused
    spec.config = {"unlabeled": {"corpus": corpus.name}}
    assert spec.problems() == {}


def test_the_unlabeled_corpus_is_one_of_the_runs_project(corpus, model_version):
    from webapp.corpus.models import Corpus
    from webapp.projects.models import Project

    theirs = Project.objects.create(name="Oncology", slug="onco")
    Corpus.objects.create(project=theirs, name="nowhere", language="en")
    spec = RunSpec(
        kind=RunKind.SELF_LEARNING,
        preset="self-learning",
        model_version=model_version,
        split_corpus=corpus,
        config={"unlabeled": {"corpus": "nowhere"}},
    )
    assert "nowhere" in spec.problems()["unlabeled.corpus"]


def test_a_dsm_run_whose_every_step_has_learning_rate_zero_is_refused_by_the_domain(dataset, model_version):
    warmup_only = dsm_spec(dataset, model_version, config={"train": {"max_steps": 1, "warmup_ratio": 0.1}})
    assert "learning rate of 0" in warmup_only.problems()["train.warmup_ratio"]
    with pytest.raises(RunError, match="the model would not change"):
        runs.launch(warmup_only)
    assert not TrainingRun.objects.exists()
    constant = dsm_spec(dataset, model_version, config={"train": {"max_steps": 1, "scheduler": "constant"}})
    assert constant.problems() == {}  # transformers' constant schedule has no warmup


def test_an_sft_run_on_a_stored_split_smaller_than_one_batch_is_refused_with_warmup(corpus, model_version):
    split, _ = splits.get_or_create_split(corpus)
    assert split.train_count < 64  # the paper's SFT effective batch size: one step, all warmup
    spec = RunSpec(kind=RunKind.SFT, preset="sft", model_version=model_version, split=split)
    assert list(spec.problems()) == ["train.warmup_ratio"]
    spec.config = {"train": {"warmup_ratio": 0.0}}
    assert spec.problems() == {}


def test_a_run_launched_from_an_italian_page_logs_its_launch_in_english(dataset, model_version):
    """Stored log lines are English (the API and log files read them); the page translates them."""
    from django.utils import translation

    with translation.override("it"):
        run = runs.launch(dsm_spec(dataset, model_version), enqueue=False)
    english = str(run.get_kind_display())
    with translation.override("it"):
        italian = str(run.get_kind_display())
    assert italian != english  # the test would see nothing otherwise
    assert run.logs.filter(message__startswith=f"Launched: {english},").exists()
