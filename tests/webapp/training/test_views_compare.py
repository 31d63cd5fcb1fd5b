"""Comparison tables of selected runs (+ CSV), the paired differences, the runs list, predictions
download, config diff."""

import csv
import io

import pytest
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
    # a table for people: its header row in the reader's language, the figures as they are
    english = client.get(url + "&csv=4").content.decode().splitlines()
    assert english[0] == "Model,System,Macro F1,95% CI low,95% CI high,Run"
    italian = client.get(url + "&csv=4", HTTP_ACCEPT_LANGUAGE="it").content.decode().splitlines()
    assert italian[0] == "Modello,Sistema,Macro F1,IC 95% inf.,IC 95% sup.,Addestramento"
    assert italian[1:] == english[1:]
    spanish = client.get(url + "&csv=2", HTTP_ACCEPT_LANGUAGE="es").content.decode().splitlines()
    assert spanish[0].startswith("Modelo,SFT base,") and spanish[1] == f"{model_version.name},,,,52.5,60.3,7.8"


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
        "note,task,variant,gold,predicted",
        f"{note.external_id},{task.slug},0,y,n",
    ]
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


def _predict(run, wrong_every=0):
    """Store predictions of `run` on its split's test items (right but on every n-th item that is
    not held out) and the Macro F1 they give, as evaluation would; return that Macro F1."""
    from ml.metrics import mean_task_f1
    from webapp.corpus.models import Note, Task
    from webapp.training import splits

    held = sorted(splits.held_out_tasks(run.split))
    items = [item for item in splits.labeled_items(run.split, "test")]
    notes = dict(Note.objects.filter(corpus=run.split.corpus).values_list("external_id", "pk"))
    tasks = {t.slug: t for t in Task.objects.filter(slug__in={i.task for i in items})}
    predicted, counted = [], 0
    for item in items:
        wrong = item.task not in held and wrong_every and counted % wrong_every == 0
        counted += item.task not in held
        other = next(option for option in tasks[item.task].options if option != item.label)
        predicted.append(other if wrong else item.label)
        RunPrediction.objects.create(
            run=run, note_id=notes[item.note_id], task=tasks[item.task], gold=item.label, predicted=predicted[-1]
        )
    scored = [(i.label, p, i.task) for i, p in zip(items, predicted) if i.task not in held]
    macro = mean_task_f1(*zip(*scored))
    run.results = {
        "macro_f1": {"estimate": macro, "low": None, "high": None},
        "per_task": {},
        "held_out": {"tasks": held, "macro_f1": None},
    }
    run.status = "done"
    run.save(update_fields=["results", "status"])
    return macro, len(scored)


def test_runs_on_the_same_split_are_compared_item_by_item(client, clinician, make_run, model_version):
    from tests.webapp.training.factories import make_labeled_corpus
    from webapp.training import splits

    split, _ = splits.get_or_create_split(make_labeled_corpus(70, name="ward-70"))  # enough test items for a CI
    dsm_model = ModelVersion.objects.create(name="tiny+dsm", family="llama", path="/m", parent=model_version)
    make_run(kind="dsm", status="done", produced_model=dsm_model)
    base_ch, dsm_ch = make_run(kind="heads", split=split), make_run(kind="heads", model_version=dsm_model, split=split)
    sft = make_run(kind="sft", split=split)
    other_split, _ = splits.get_or_create_split(split.corpus, seed=1)
    elsewhere = make_run(kind="sft", model_version=dsm_model, split=other_split)  # DSM + SFT, another split
    base_macro, n_items = _predict(base_ch, wrong_every=2)
    dsm_macro, _ = _predict(dsm_ch, wrong_every=5)
    _predict(sft, wrong_every=3)
    _predict(elsewhere)
    client.force_login(clinician)
    url = reverse("training:compare") + "?" + "&".join(f"runs={r.pk}" for r in (base_ch, dsm_ch, sft, elsewhere))
    response = client.get(url)
    paired = {line.row.run_id: line for line in response.context["paired"]}
    assert set(paired) == {dsm_ch.pk, base_ch.pk, elsewhere.pk}  # base + SFT is its model's first run
    line = paired[dsm_ch.pk]
    assert line.reference.run_id == base_ch.pk and line.result.n == n_items and line.has_ci
    assert line.result.diff == pytest.approx(dsm_macro - base_macro)  # the Δ of the two runs' Macro F1
    assert line.result.low <= line.result.diff <= line.result.high and 0 < line.result.p_value <= 1
    assert paired[base_ch.pk].reference.run_id == sft.pk
    assert paired[elsewhere.pk].reason == f"not paired: different splits (split {split.pk} vs split {other_split.pk})"
    html = response.content.decode()
    assert "Not paired: different splits" in html and 'id="paired"' in html and "&amp;csv=paired" in html
    rows = {r["Run"]: r for r in csv.DictReader(io.StringIO(client.get(url + "&csv=paired").content.decode()))}
    assert rows[str(dsm_ch.pk)]["Δ Macro F1"] == f"{100 * line.result.diff:.1f}"
    assert rows[str(dsm_ch.pk)]["Δ 95% CI low"] == f"{100 * line.result.low:.1f}"
    assert rows[str(dsm_ch.pk)]["p"] == f"{line.result.p_value:.3f}" and rows[str(dsm_ch.pk)]["Pairing"] == "paired"
    assert rows[str(elsewhere.pk)]["Δ Macro F1"] == "" and rows[str(elsewhere.pk)]["Pairing"].startswith("not paired")


def test_the_user_picks_the_reference_run(client, clinician, make_run):
    base_ch, sft = make_run(kind="heads"), make_run(kind="sft")
    _predict(base_ch, wrong_every=2)
    _predict(sft)
    client.force_login(clinician)
    url = reverse("training:compare") + f"?runs={base_ch.pk}&runs={sft.pk}"
    default = client.get(url).context["paired"]
    assert [(p.row.run_id, p.reference.run_id) for p in default] == [(base_ch.pk, sft.pk)]
    chosen = client.get(url + f"&reference={base_ch.pk}")
    assert [(p.row.run_id, p.reference.run_id) for p in chosen.context["paired"]] == [(sft.pk, base_ch.pk)]
    assert chosen.context["paired"][0].result.diff > 0
    assert f'<option value="{base_ch.pk}" selected>' in chosen.content.decode()


def test_the_diff_of_three_selected_runs_says_which_one_it_leaves_out(client, clinician, make_run):
    a, b, c = make_run(kind="dsm"), make_run(kind="dsm"), make_run(kind="dsm")
    client.force_login(clinician)
    response = client.get(reverse("training:diff") + f"?runs={a.pk}&runs={b.pk}&runs={c.pk}")
    html = response.content.decode()
    assert response.status_code == 200 and [run.pk for run in response.context["left_out"]] == [c.pk]
    assert 'id="diff-left-out"' in html and reverse("training:run_detail", args=[c.pk]) in html
    two = client.get(reverse("training:diff") + f"?runs={a.pk}&runs={b.pk}").content.decode()
    assert 'id="diff-left-out"' not in two


def test_the_produced_model_badge_links_to_the_trained_model_section(client, researcher, make_run, model_version):
    run = make_run(kind="dsm", status="done")
    run.produced_model = ModelVersion.objects.create(name="tiny+dsm", family="llama", path="/m", parent=model_version)
    run.save(update_fields=["produced_model"])
    client.force_login(researcher)
    listing = client.get(reverse("training:run_list")).content.decode()
    assert f'href="{reverse("training:run_detail", args=[run.pk])}#trained-model"' in listing
    detail = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    assert 'id="trained-model"' in detail
    assert f"{reverse('pipeline:job_launch')}?model_version={run.produced_model_id}" in detail


HOSTILE = ['=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tn", "\rn"]


def _formula_cells(text):
    """Cells a spreadsheet would run as a formula: a figure like "-1.5" is a number, not one."""
    cells = [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]

    def is_number(cell):
        try:
            float(cell)
        except ValueError:
            return False
        return True

    return [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r")) and not is_number(c)]


def test_predictions_csv_neutralises_ids_and_labels_a_spreadsheet_would_run(client, clinician, make_run, corpus):
    run = make_run(kind="heads", status="done")
    note = corpus.notes.first()
    task = note.annotations.first().task
    for n, hostile in enumerate(HOSTILE):
        note.external_id = hostile
        note.save(update_fields=["external_id"])
        RunPrediction.objects.create(run=run, note=note, task=task, variant=n, gold=hostile, predicted="n")
    client.force_login(clinician)
    response = client.get(reverse("training:run_predictions", args=[run.pk, "csv"]))
    text = b"".join(response.streaming_content).decode()
    assert _formula_cells(text) == []
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [(row["note"], row["gold"]) for row in rows if row["variant"] == "0"] == [
        ("'" + HOSTILE[-1], "'" + HOSTILE[0])
    ]
    assert {row["gold"] for row in rows} == {"'" + value for value in HOSTILE}  # kept, only marked as text


@pytest.mark.parametrize("wanted", ["2", "3", "4", "paired"])
def test_comparison_csvs_neutralise_labels_a_spreadsheet_would_run(client, clinician, make_run, wanted):
    hostile = ModelVersion.objects.create(name=HOSTILE[0], family="llama", path="/m")
    runs = [
        make_run(kind="heads", status="done", results=results(0.5), macro_f1=0.5),
        make_run(kind="heads", status="done", results=results(0.4), macro_f1=0.4, model_version=hostile),
        make_run(kind="sft", status="done", results=results(0.3), macro_f1=0.3, model_version=hostile),
    ]
    client.force_login(clinician)
    url = reverse("training:compare") + "?" + "&".join(f"runs={r.pk}" for r in runs) + f"&csv={wanted}"
    text = client.get(url).content.decode()
    assert _formula_cells(text) == []
    if wanted == "2":
        assert "'" + HOSTILE[0] in [cell for row in csv.reader(io.StringIO(text)) for cell in row]
