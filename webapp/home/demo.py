"""The demo's seeding, one function shared by `manage.py rundemo` and the tests that check what a
new user sees after it (tests/browser/test_demo_first_job.py): the task catalog, the synthetic
emergency-department corpus, one user per role (passwords printed) and the first relevance job,
planned and queued for the relevance worker. Idempotent: a second run changes no note and
queues no second job.

The first job is sized from this machine's measured rate (`first_job_size`, from the seconds a
prompt `python -m ml rate` measured, which rundemo runs): as many notes x the DEMO_TASKS (tasks
with synthetic gold labels) as fit DEMO_JOB_SECONDS of AttnLRP prompts, at least 1 note and at
most DEMO_JOB_NOTES (also the size when nothing was measured), in chunks of about
DEMO_CHUNK_SECONDS, so maps reach Review every few seconds. It uses the default model version,
whatever its path.
"""

import math
from dataclasses import dataclass

from django.core.management import call_command

from webapp.lifecycle.status import ENDED
from webapp.pipeline.models import RelevanceJob

DEMO_CORPUS = "demo-ed"
DEMO_PROJECT = "demo"
DEMO_TASKS = ["heart-rate", "blood-pressure", "spo2", "anticoagulants-or-antiplatelet-drug-therapy", "chest-pain"]
DEMO_JOB_SECONDS = 45  # the first job's prompts at the measured rate: done within a minute
DEMO_JOB_NOTES = 6  # at most (x 5 tasks = 30 prompts); also the size when nothing was measured
DEMO_CHUNK_SECONDS = 5  # a chunk's maps are stored when it ends
DEMO_CHUNK_SIZE = 2  # prompts a chunk when nothing was measured


@dataclass(frozen=True)
class JobSize:
    notes: int
    chunk_size: int
    seconds: float | None  # the prompts' projected time; None: not measured

    @property
    def prompts(self) -> int:
        return self.notes * len(DEMO_TASKS)


def demo_project():
    """The project the demo's corpus and users are in (made on first use)."""
    from webapp.projects.models import Project

    return Project.objects.get_or_create(slug=DEMO_PROJECT, defaults={"name": "Demo (synthetic notes)"})[0]


def first_job_size(seconds_per_prompt: float | None) -> JobSize:
    """The first job for a machine that computes a demo prompt in `seconds_per_prompt` (None:
    not measured, the fixed default)."""
    if not seconds_per_prompt or seconds_per_prompt <= 0:
        return JobSize(DEMO_JOB_NOTES, DEMO_CHUNK_SIZE, None)
    fit = math.floor(DEMO_JOB_SECONDS / (seconds_per_prompt * len(DEMO_TASKS)))
    notes = max(1, min(DEMO_JOB_NOTES, fit))
    chunk = max(1, round(DEMO_CHUNK_SECONDS / seconds_per_prompt))
    return JobSize(notes, chunk, notes * len(DEMO_TASKS) * seconds_per_prompt)


def seed(*, notes: int, stdout, first_job: bool = True, size=None) -> RelevanceJob | None:
    """Load the catalog, the corpus and the users; queue the first job unless the corpus has one.
    `size`: a JobSize, or a callable returning one, asked only when the job is queued (rundemo
    measures the rate meanwhile); None: the unmeasured default. Returns the demo corpus's first
    job (None with first_job=False on a fresh database)."""
    call_command("load_task_catalog", stdout=stdout)
    call_command("load_demo_corpus", corpus=DEMO_CORPUS, notes=notes, stdout=stdout)
    call_command("create_demo_users", stdout=stdout)
    if first_job and first_demo_job() is None:
        size = size() if callable(size) else size or first_job_size(None)
        call_command(
            "launch_relevance_job",
            DEMO_CORPUS,
            project=DEMO_PROJECT,
            tasks="list",
            task=DEMO_TASKS,
            limit=size.notes,
            chunk_size=size.chunk_size,
            stdout=stdout,
        )
    return first_demo_job()


def first_demo_job() -> RelevanceJob | None:
    demo = RelevanceJob.objects.filter(corpus__name=DEMO_CORPUS, corpus__project__slug=DEMO_PROJECT)
    return demo.order_by("pk").first()


def job_ended(job: RelevanceJob) -> bool:
    """Read again from the database: has the job ended (done, failed or cancelled)?"""
    return RelevanceJob.objects.filter(pk=job.pk, status__in=ENDED).exists()
