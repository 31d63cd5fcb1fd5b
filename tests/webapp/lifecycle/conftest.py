import pytest

from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from webapp.pipeline import jobs, planning


@pytest.fixture
def job(db):
    """A planned relevance job: its chunks are the units of work these tests move (3 chunks)."""
    launched = jobs.launch(spec(make_corpus(3), make_model_version(), make_tasks(2), chunk_size=2), enqueue=False)
    planning.plan_now(launched)
    launched.refresh_from_db()
    return launched
