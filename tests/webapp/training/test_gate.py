"""The gate on training (webapp.deid.gate): a launch whose corpora are not all de-identified is
refused with the reason; a project admin's confirmation launches it, audited on the run; a
researcher's is refused. MLflow gets nothing of such a run unless its launch was confirmed. The
predictions download (the notes' ids and labels) passes the gate too."""

import pytest
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus
from webapp.deid import gate
from webapp.integrations import mlflow_log
from webapp.training import runs
from webapp.training.models import TrainingRun

from .test_views_run_new import form_data

REASON = "Corpus ward is not de-identified: de-identify it, or a project admin may confirm"
CHECKBOX = 'name="confirm_identifiable"'


@pytest.fixture
def identifiable(corpus):
    Corpus.objects.filter(pk=corpus.pk).update(deidentified=False)
    corpus.refresh_from_db()
    return corpus


def releases():
    return AuditEvent.objects.filter(action=AuditEvent.Action.RELEASE_IDENTIFIABLE)


def launch_data(client, dataset, **extra):
    data = form_data(client.get(reverse("training:run_new")))
    data.update(dataset=dataset.pk, train__max_steps=4, train__finetune="lora", train__warmup_ratio=0, **extra)
    return data


def test_a_launch_on_a_corpus_that_is_not_deidentified_is_refused_with_the_reason(
    client, researcher, dataset, identifiable
):
    client.force_login(researcher)
    response = client.post(reverse("training:run_new"), launch_data(client, dataset))
    html = response.content.decode()
    assert response.status_code == 200 and REASON in html and CHECKBOX not in html
    assert not TrainingRun.objects.exists()


def test_a_project_admin_confirms_and_the_run_carries_the_release(client, admin_user, dataset, identifiable):
    client.force_login(admin_user)
    refused = client.post(reverse("training:run_new"), launch_data(client, dataset)).content.decode()
    assert REASON in refused and CHECKBOX in refused
    response = client.post(reverse("training:run_new"), launch_data(client, dataset, confirm_identifiable="1"))
    run = TrainingRun.objects.get()
    assert response.status_code == 302
    event = releases().get()
    assert (event.object_type, event.object_id) == ("training.TrainingRun", str(run.pk))
    assert event.details["what"] == "training launch" and event.details["corpora"] == [identifiable.pk]
    assert gate.released(run)


def test_a_researchers_confirmation_is_refused(client, researcher, dataset, identifiable):
    client.force_login(researcher)
    html = client.post(
        reverse("training:run_new"), launch_data(client, dataset, confirm_identifiable="1")
    ).content.decode()
    assert "Only an admin of the project may confirm it" in html
    assert not TrainingRun.objects.exists() and not releases().exists()


def test_a_deidentified_corpus_launches_without_asking(client, researcher, dataset):
    client.force_login(researcher)
    response = client.post(reverse("training:run_new"), launch_data(client, dataset))
    assert response.status_code == 302 and TrainingRun.objects.count() == 1 and not releases().exists()


def test_the_unlabeled_corpus_of_a_self_learning_run_is_one_of_its_corpora(corpus, model_version):
    other = Corpus.objects.create(project=corpus.project, name="unlabeled ward", language="en")
    spec = runs.RunSpec(
        kind="self_learning",
        model_version=model_version,
        split_corpus=corpus,
        config={"unlabeled": {"corpus": "unlabeled ward"}},
    )
    assert [c.name for c in spec.corpora()] == ["ward", "unlabeled ward"]
    with pytest.raises(gate.Refused, match="Corpus unlabeled ward is not de-identified"):
        gate.gate_for(spec.corpora(), None).check(None, False)
    assert other in spec.corpora()


# ---------------------------------------------------------------- predictions


@pytest.fixture
def sft_run(make_run, corpus):
    run = make_run("sft")
    Corpus.objects.filter(pk=corpus.pk).update(deidentified=False)
    return run


def test_predictions_are_refused_then_confirmed_by_an_admin(client, researcher, admin_user, sft_run):
    url = reverse("training:run_predictions", args=[sft_run.pk, "csv"])
    client.force_login(researcher)
    response = client.get(url, follow=True)
    assert REASON in response.content.decode() and not response.streaming
    assert "Only an admin" in client.get(url + "?confirm_identifiable=1", follow=True).content.decode()
    client.force_login(admin_user)
    response = client.get(url + "?confirm_identifiable=1")
    assert response.streaming
    assert releases().get().details["what"] == "predictions download"


# ---------------------------------------------------------------- MLflow


@pytest.fixture
def tracking(settings, corpus, monkeypatch):
    settings.MLFLOW_TRACKING_URI = "http://127.0.0.1:9"
    corpus.project.mlflow_tracking = True
    corpus.project.save(update_fields=["mlflow_tracking"])
    sent = []

    def send(unit, project, name, params, metrics, tags, warn=None):
        sent.append(unit.pk)
        return mlflow_log.Logged(project.mlflow_experiment, "1", f"mlflow-{unit.pk}")

    monkeypatch.setattr(mlflow_log, "_send", send)
    return sent


def ended(run) -> TrainingRun:
    TrainingRun.objects.filter(pk=run.pk).update(status="done")
    return TrainingRun.objects.get(pk=run.pk)


def test_a_run_of_a_corpus_that_is_not_deidentified_logs_nothing_to_mlflow(tracking, make_run, corpus):
    run = make_run()
    Corpus.objects.filter(pk=corpus.pk).update(deidentified=False)
    assert mlflow_log.log_run(ended(run)) is None
    assert tracking == []
    said = run.logs.filter(level="warning").get().message
    assert said.startswith("Not logged to MLflow: Corpus ward is not de-identified")
    assert "No project admin confirmed this run's launch" in said


def test_a_run_whose_launch_an_admin_confirmed_is_logged(tracking, admin_user, dataset, model_version, identifiable):
    spec = runs.RunSpec(kind="dsm", model_version=model_version, dataset=dataset, config={"train": {"warmup_ratio": 0}})
    with pytest.raises(gate.Refused):
        runs.launch(spec, actor=admin_user)
    run = runs.launch(spec, actor=admin_user, confirm_identifiable=True)
    assert mlflow_log.log_run(ended(run)) == f"mlflow-{run.pk}" and tracking == [run.pk]


def test_a_run_of_a_deidentified_corpus_is_logged(tracking, make_run):
    run = make_run()
    assert mlflow_log.log_run(ended(run)) == f"mlflow-{run.pk}"
