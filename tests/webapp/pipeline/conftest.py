import pytest

from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from webapp.pipeline import jobs


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
    """launched(**spec_changes) -> a job planned and (after commit, which these tests never
    reach) enqueued; 6 notes x 4 tasks in chunks of 4 by default."""

    def launch(**changes):
        changes.setdefault("tasks", tasks)
        return jobs.launch(spec(corpus, model_version, **changes), actor=researcher)

    return launch
