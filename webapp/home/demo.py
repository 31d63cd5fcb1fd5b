"""The demo's seeding, one function shared by `manage.py rundemo` and the tests that check what a
new user sees after it (tests/browser/test_demo_first_job.py): the task catalog, the synthetic
emergency-department corpus, one user per role (passwords printed) and the first relevance job,
planned and queued for the relevance worker. Idempotent: a second run changes no note and
queues no second job.

The first job is sized to finish in under 2 minutes on an idle 2-core machine with SmolLM2-135M
(rundemo's docstring has the measurements): DEMO_JOB_NOTES notes x the DEMO_TASKS (tasks with
synthetic gold labels) = 30 AttnLRP prompts, DEMO_CHUNK_SIZE prompts a chunk, so maps reach
Review every few seconds. It uses the default model version, whatever its path.
"""

from django.core.management import call_command

from webapp.lifecycle.status import ENDED
from webapp.pipeline.models import RelevanceJob

DEMO_CORPUS = "demo-ed"
DEMO_TASKS = ["heart-rate", "blood-pressure", "spo2", "anticoagulants-or-antiplatelet-drug-therapy", "chest-pain"]
DEMO_JOB_NOTES = 6  # x 5 tasks = 30 prompts
DEMO_CHUNK_SIZE = 2  # prompts a chunk: a chunk's maps are stored when it ends


def seed(*, notes: int, stdout, first_job: bool = True) -> RelevanceJob | None:
    """Load the catalog, the corpus and the users; queue the first job unless the corpus has one.
    Returns the demo corpus's first job (None with first_job=False on a fresh database)."""
    call_command("load_task_catalog", stdout=stdout)
    call_command("load_demo_corpus", corpus=DEMO_CORPUS, notes=notes, stdout=stdout)
    call_command("create_demo_users", stdout=stdout)
    if first_job and first_demo_job() is None:
        call_command(
            "launch_relevance_job",
            DEMO_CORPUS,
            tasks="list",
            task=DEMO_TASKS,
            limit=DEMO_JOB_NOTES,
            chunk_size=DEMO_CHUNK_SIZE,
            stdout=stdout,
        )
    return first_demo_job()


def first_demo_job() -> RelevanceJob | None:
    return RelevanceJob.objects.filter(corpus__name=DEMO_CORPUS).order_by("pk").first()


def job_ended(job: RelevanceJob) -> bool:
    """Read again from the database: has the job ended (done, failed or cancelled)?"""
    return RelevanceJob.objects.filter(pk=job.pk, status__in=ENDED).exists()
