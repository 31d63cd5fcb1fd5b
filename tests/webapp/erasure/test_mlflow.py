"""An erasure of a corpus deletes the MLflow runs its training runs and evaluations were logged
as (webapp.erasure.erasing.forget_mlflow_runs), each once, on a tracking server that records the
calls (a small HTTP server in this process: MLflow's REST API, its runs/delete only)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.webapp.erasure.helpers import erase_here
from webapp.erasure import erasing
from webapp.erasure.models import ErasureRequest
from webapp.evaluation.models import RelevanceEvaluation
from webapp.training.models import TrainingRun

Scope = ErasureRequest.Scope
pytestmark = pytest.mark.django_db


@pytest.fixture
def tracking_server(settings):
    deleted = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path.endswith("/runs/delete"):
                deleted.append(body["run_id"])
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.MLFLOW_TRACKING_URI = f"http://127.0.0.1:{server.server_port}"
    yield deleted
    server.shutdown()


def logged(world):
    TrainingRun.objects.filter(pk=world.run.pk).update(provenance={"mlflow": {"run_id": "run-a"}, "host": "h"})
    RelevanceEvaluation.objects.filter(corpus=world.ward).update(result={"mlflow": {"run_id": "run-b"}, "auc": 0.5})


def test_a_corpus_erasure_deletes_its_mlflow_runs(world, tracking_server, admin_user):
    logged(world)
    counted, _ = erasing.plan(world.project, Scope.CORPUS, corpus=world.ward)
    assert counted.files["MLflow runs"] == 2
    erasure, _, _ = erase_here(world.project, Scope.CORPUS, corpus=world.ward, actor=admin_user)
    assert sorted(tracking_server) == ["run-a", "run-b"]
    assert erasure.files_erased["MLflow runs"] == 2


def test_a_patients_erasure_leaves_the_runs_it_keeps_logged(world, tracking_server, admin_user):
    logged(world)
    erase_here(world.project, Scope.PATIENT, corpus=world.ward, patient_key="patient_id", patients=["P2"])
    assert tracking_server == []


def test_an_unreachable_tracking_server_fails_the_erasure_in_words_and_resume_goes_on(world, settings, admin_user):
    logged(world)
    settings.MLFLOW_TRACKING_URI = "http://127.0.0.1:1"
    erasure = erasing.request(world.project, Scope.CORPUS, corpus=world.ward, actor=admin_user, send=False)
    claimed = erasing.claim(erasure.pk)
    with pytest.raises(Exception) as raised:
        erasing.run(claimed)
    erasing.fail(claimed, raised.value)
    erasure.refresh_from_db()
    assert erasure.status == "failed" and "could not delete its MLflow runs" in erasure.error
    settings.MLFLOW_TRACKING_URI = ""  # no server any more: counted as left there
    assert erasing.resume(erasure) and erasing.run(erasing.claim(erasure.pk)) == "done"
    erasure.refresh_from_db()
    assert erasure.files_erased["MLflow runs left on a tracking server no longer set"] == 2
