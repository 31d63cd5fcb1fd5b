"""Comparison tables of selected runs (+ CSV), the runs list, predictions download, config diff."""
from django.urls import reverse

from webapp.pipeline.models import ModelVersion
from webapp.training.models import RunPrediction


def results(estimate, low=None, high=None):
    return {"macro_f1": {"estimate": estimate, "low": low, "high": high}, "per_task": {}, "held_out": {}}


def test_table_2_compares_ch_on_the_base_and_the_dsm_model(client, clinician, make_run, model_version):
    dsm_run = make_run(kind="dsm", status="done")
    dsm_model = ModelVersion.objects.create(name="tiny+dsm", family="llama", path="/m", parent=model_version)
    dsm_run.produced_model = dsm_model
    dsm_run.save(update_fields=["produced_model"])
    base_ch = make_run(kind="heads", status="done", results=results(0.525, 0.5, 0.55))
    dsm_ch = make_run(kind="heads", status="done", results=results(0.603, 0.57, 0.63))
    dsm_ch.model_version = dsm_model
    dsm_ch.save(update_fields=["model_version"])
    client.force_login(clinician)
    url = reverse("training:compare") + f"?runs={base_ch.pk}&runs={dsm_ch.pk}&runs={dsm_run.pk}"
    response = client.get(url)
    table2 = response.context["tables"]["2"]
    assert table2.rows == [[model_version.name, None, None, None, 52.5, 60.3, 7.8]]
    assert [run.pk for run in response.context["skipped"]] == [dsm_run.pk]
    table4 = response.context["tables"]["4"]
    assert [row[1] for row in table4.rows] == ["base + CH", "DSM + CH"]
    csv_response = client.get(url + "&csv=2")
    assert csv_response["Content-Type"].startswith("text/csv")
    assert csv_response.content.decode().splitlines()[1] == f"{model_version.name},,,,52.5,60.3,7.8"
    assert client.get(url + "&csv=9").status_code == 400


def test_the_runs_list_lets_one_select_runs_to_compare(client, clinician, make_run):
    run = make_run(kind="heads", status="done", results=results(0.5), macro_f1=0.5)
    client.force_login(clinician)
    html = client.get(reverse("training:run_list")).content.decode()
    assert f'name="runs" value="{run.pk}"' in html and "Compare selected" in html and "50.0" in html


def test_predictions_download_as_csv_and_jsonl(client, clinician, make_run, corpus):
    run = make_run(kind="heads", status="done")
    note = corpus.notes.first()
    task = note.annotations.first().task
    RunPrediction.objects.create(run=run, note=note, task=task, gold="y", predicted="n")
    client.force_login(clinician)
    csv_response = client.get(reverse("training:run_predictions", args=[run.pk, "csv"]))
    assert b"".join(csv_response.streaming_content).decode().splitlines() == [
        "note,task,variant,gold,predicted", f"{note.external_id},{task.slug},0,y,n"]
    assert 'filename="run-' in csv_response["Content-Disposition"]
    jsonl = client.get(reverse("training:run_predictions", args=[run.pk, "jsonl"]))
    assert b'"predicted": "n"' in b"".join(jsonl.streaming_content)
    assert client.get(reverse("training:run_predictions", args=[run.pk, "xml"])).status_code == 400


def test_the_diff_shows_only_what_differs(client, clinician, make_run):
    a = make_run(kind="dsm")
    b = make_run(kind="dsm")
    b.config["train"]["lr"] = 1e-4
    b.seed = 3
    b.save(update_fields=["config", "seed"])
    client.force_login(clinician)
    response = client.get(reverse("training:diff") + f"?runs={a.pk}&runs={b.pk}")
    assert response.context["differences"] == [("seed", 0, 3), ("train.lr", 4e-5, 1e-4)]
    assert client.get(reverse("training:diff") + f"?a={a.pk}").status_code == 400
