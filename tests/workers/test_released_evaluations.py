"""Real Celery relevance workers, one of which cannot load an evaluation's model (as
tests/workers/test_released_chunks.py does for relevance chunks).

The model is a tiny random Llama published to the S3-compatible server of the tests; worker A's
storage is unreachable, worker B reaches it. A releases the evaluation (the evaluation page names
it and the model), B computes and scores it. Alone, A releases it RELEVANCE_RELEASE_LIMIT times and
the evaluation ends failed: no endless loop.
"""

import pytest
from django.urls import reverse

from tests.webapp.evaluation.factories import make_annotated_corpus, spec
from tests.webapp.pipeline import s3server
from tests.webapp.pipeline.factories import make_model_version
from tests.webapp.pipeline.s3server import BUCKET, unreachable_options
from tests.workers import test_evaluation
from tests.workers.test_evaluation import reload, wait
from tests.workers.test_released_chunks import node, storage_env
from webapp.evaluation import evaluations
from webapp.lib import storage
from webapp.lifecycle import queue
from webapp.pipeline.models import JobStatus, PeakProfile

s3_server = s3server.s3_server  # the fixture (session-scoped: one server)
relevance_queue_empty = test_evaluation.relevance_queue_empty  # the fixture
MODEL = "tiny-llama+remote"


def remote_evaluation(tiny_model_dir, s3_server):
    uri = storage.publish_named(tiny_model_dir, f"s3://{BUCKET}/workers", "tiny", s3_server.options)
    corpus, _ = make_annotated_corpus(n_notes=4, n_tasks=2, sentences=2)
    # transaction=True tests empty the tables after each test, the migrations' default profile included
    profile, _ = PeakProfile.objects.get_or_create(name="paper-default", version=1)
    evaluation = evaluations.launch(
        spec(corpus, make_model_version(uri, name=MODEL), profile=profile, max_pairs=2), enqueue=False
    )
    queue.send(evaluations.RUN_TASK, evaluation.pk)  # committed already: transaction=True
    return evaluation


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_lacking_the_model_releases_the_evaluation_to_one_that_has_it(
    start_worker, tiny_model_dir, s3_server, tmp_path, relevance_queue_empty, client, clinician
):
    release = {"RELEVANCE_RELEASE_LIMIT": 50, "RELEVANCE_RELEASE_DELAY_SECONDS": 0.5}
    lacking = start_worker("relevance", **storage_env(unreachable_options(), tmp_path / "a-cache", **release))
    evaluation = remote_evaluation(tiny_model_dir, s3_server)
    wait(lambda: any(k.startswith(node(lacking)) for k in reload(evaluation).lacking), lacking, "worker A's release")
    assert reload(evaluation).status != JobStatus.FAILED

    having = start_worker("relevance", **storage_env(s3_server.options, tmp_path / "b-cache", **release))
    wait(lambda: not reload(evaluation).is_active, having, "the evaluation to end")
    evaluation = reload(evaluation)
    assert evaluation.status == JobStatus.DONE, f"{evaluation.error}\n{having.log()}"
    assert evaluation.worker.startswith(node(having)) and evaluation.error == ""
    assert evaluation.done == evaluation.total == 2 and evaluation.result["groups"]
    assert evaluation.releases and all(worker.startswith(node(lacking)) for worker in evaluation.releases)
    [(name, info)] = evaluation.lacking.items()
    assert name.startswith(node(lacking)) and info["model"] == MODEL
    assert "storage unreachable" in info["reason"] and info["releases"] >= 1
    assert "Traceback" not in lacking.log()  # released in plain words, not failed

    client.force_login(clinician)
    html = client.get(reverse("evaluation:detail", args=[evaluation.pk])).content.decode()
    assert f"<strong>{name}</strong> lacks model <strong>{MODEL}</strong>" in html


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_evaluation_no_live_worker_can_load_ends_failed_after_the_release_limit(
    start_worker, tiny_model_dir, s3_server, tmp_path, relevance_queue_empty
):
    limit = 2
    release = {"RELEVANCE_RELEASE_LIMIT": limit, "RELEVANCE_RELEASE_DELAY_SECONDS": 0.2}
    lacking = start_worker("relevance", **storage_env(unreachable_options(), tmp_path / "a-cache", **release))
    evaluation = remote_evaluation(tiny_model_dir, s3_server)
    wait(lambda: not reload(evaluation).is_active, lacking, "the evaluation to end", timeout=120)
    evaluation = reload(evaluation)
    assert evaluation.status == JobStatus.FAILED and evaluation.resumable
    assert evaluation.error.startswith(f"No worker could load model {MODEL}: released {limit} times by each of")
    assert list(evaluation.releases.values()) == [limit]
