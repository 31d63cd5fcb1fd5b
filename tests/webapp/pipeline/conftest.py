import pytest

from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from webapp.pipeline import jobs, planning


@pytest.fixture
def corpus(db):
    return make_corpus(6)


@pytest.fixture
def tasks(db):
    return make_tasks()


@pytest.fixture
def model_version(db):
    return make_model_version()


@pytest.fixture
def launched(corpus, tasks, model_version, researcher):
    """launched(**spec_changes) -> a job launched, then planned here as a worker would (its
    chunks queued, no message sent); 6 notes x 4 tasks in chunks of 4 by default."""

    def launch(**changes):
        changes.setdefault("tasks", tasks)
        job = jobs.launch(spec(corpus, model_version, **changes), actor=researcher, enqueue=False)
        planning.plan_now(job)
        return job

    return launch
