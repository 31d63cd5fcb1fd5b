"""The run page: live progress fragment (polling stops at the end), charts data, logs, results."""

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from webapp.training.models import RunLog, RunMetric


def test_the_page_shows_progress_configuration_and_provenance(client, clinician, make_run):
    run = make_run(
        status="running",
        step=3,
        total_steps=10,
        epoch=0.3,
        loss=1.25,
        lr=2e-5,
        tokens_per_s=812.0,
        eta_s=95.0,
        phase="training",
        provenance={"libraries": {"torch": "2.13.0"}, "device": "cpu", "host": "w1"},
    )
    RunMetric.objects.create(run=run, step=3, epoch=0.3, loss=1.25, lr=2e-5, tokens_per_s=812.0)
    client.force_login(clinician)
    html = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    for text in (
        "3 of 10 (30%)",
        "1.2500",
        "2e-05",
        "812",
        "about 0:01:35",
        "train.lr",
        "torch",
        "2.13.0",
        'hx-trigger="every 2s"',
        "chart-loss",
        "uPlot.iife.min.js",
    ):
        assert text in html, text
    assert "Cancel run" not in html  # clinicians do not get the buttons


def test_the_fragment_polls_while_running_and_stops_with_286_once_ended(client, researcher, make_run):
    run = make_run(status="running")
    client.force_login(researcher)
    url = reverse("training:run_detail", args=[run.pk])
    live = client.get(url, headers={"HX-Request": "true"})
    assert live.status_code == 200 and b'id="run-live"' in live.content and b"<html" not in live.content
    assert b"Cancel run" in live.content
    run.status = "done"
    run.save(update_fields=["status"])
    ended = client.get(url, headers={"HX-Request": "true"})
    assert ended.status_code == 286 and b"hx-trigger" not in ended.content


def test_a_run_whose_worker_was_lost_says_so_without_an_eta_and_offers_cancel_and_resume(
    client, researcher, make_run, settings
):
    lost = timezone.now() - timedelta(seconds=settings.WORK_STALL_SECONDS + 5)
    run = make_run(status="running", attempts=1, step=3, total_steps=10, eta_s=95.0, heartbeat=lost, started=lost)
    client.force_login(researcher)
    html = client.get(reverse("training:run_detail", args=[run.pk]), headers={"HX-Request": "true"}).content.decode()
    assert f"stalled: worker lost at {timezone.localtime(lost):%H:%M}" in html and "status-stalled" in html
    assert "about 0:01:35" not in html and "Cancel run" in html and "Resume from the last checkpoint" in html
    listed = client.get(reverse("training:run_list")).content.decode()
    assert f"stalled: worker lost at {timezone.localtime(lost):%H:%M}" in listed


def test_logs_are_listed_latest_last(client, clinician, make_run):
    run = make_run()
    RunLog.objects.create(run=run, message="Phase: training.")
    RunLog.objects.create(run=run, level="error", message="boom")
    client.force_login(clinician)
    html = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    assert html.index("Phase: training.") < html.index("boom") and "log-error" in html


def test_the_metrics_are_served_per_phase_for_the_charts(client, clinician, make_run):
    run = make_run(status="running")
    RunMetric.objects.bulk_create(
        [RunMetric(run=run, step=s, loss=1.0 / s, lr=1e-4, epoch=s / 10) for s in (2, 1)]
        + [RunMetric(run=run, phase="heads", step=1, loss=0.3)]
    )
    client.force_login(clinician)
    payload = client.get(reverse("training:run_metrics", args=[run.pk])).json()
    assert payload["ended"] is False
    phases = {p["phase"]: p for p in payload["phases"]}
    assert phases["train"]["step"] == [1, 2] and phases["train"]["loss"] == [1.0, 0.5]
    assert phases["heads · head 1"]["loss"] == [0.3]


def test_long_curves_are_thinned_keeping_the_last_point():
    from webapp.training.charts import _thin

    series = {"step": list(range(1, 10_001)), "loss": list(range(10_000))}
    thin = _thin(series, 1000)
    assert len(thin["step"]) <= 1001 and thin["step"][0] == 1 and thin["step"][-1] == 10_000


def test_results_and_the_produced_model_are_shown(client, clinician, make_run, model_version):
    from webapp.pipeline.models import ModelVersion

    produced = ModelVersion.objects.create(name="tiny+dsm-run", family="llama", path="/x", parent=model_version)
    run = make_run(
        kind="heads",
        status="done",
        produced_model=produced,
        results={
            "macro_f1": {"estimate": 0.603, "low": 0.571, "high": 0.634},
            "per_task": {"heart-rate": 0.5, "spo2": 0.7},
            "held_out": {"macro_f1": {"estimate": 0.7, "low": 0.6, "high": 0.8}, "tasks": ["spo2"]},
            "n_test": 9,
        },
    )
    client.force_login(clinician)
    html = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    for text in ("60.3", "57.1", "63.4", "held out", "tiny+dsm-run", "predictions.csv", "predictions.jsonl"):
        assert text in html, text


def ch_run_with_two_heads(make_run, **fields):
    """A CH run whose two heads (tasks in slug order) trained 5 epochs each: 10 metric rows."""
    run = make_run(kind="heads", **fields)
    RunMetric.objects.bulk_create(
        [
            RunMetric(
                run=run,
                phase="heads",
                step=s,
                epoch=(s - 1) % 5 + 1,
                loss=(2.0 if s <= 5 else 0.4) / ((s - 1) % 5 + 1),
                lr=1e-3,
            )
            for s in range(1, 11)
        ]
    )
    return run


def test_ch_losses_are_one_series_per_task_never_joined_end_to_end(client, clinician, make_run):
    run = ch_run_with_two_heads(make_run, status="done")
    client.force_login(clinician)
    payload = client.get(reverse("training:run_metrics", args=[run.pk])).json()
    first, second = sorted(run.split.tasks)[:2] if len(run.split.tasks) == 2 else ("head 1", "head 2")
    assert [p["phase"] for p in payload["phases"]] == [f"heads · {first}", f"heads · {second}"]
    assert all(p["step"] == [1, 2, 3, 4, 5] for p in payload["phases"]) and payload["x_label"] == "head epoch"
    assert payload["phases"][1]["loss"][0] == 0.4  # the second head starts on its own curve


def test_the_header_shows_the_chart_s_last_point_after_training_has_moved_on(client, clinician, make_run):
    # evaluation reset the run's own figures (step 0, no loss) while the chart holds 10 points
    run = ch_run_with_two_heads(
        make_run,
        status="running",
        phase="evaluating on the test items",
        step=0,
        total_steps=1,
        loss=None,
        lr=None,
        epoch=None,
    )
    client.force_login(clinician)
    html = client.get(reverse("training:run_detail", args=[run.pk]), headers={"HX-Request": "true"}).content.decode()
    payload = client.get(reverse("training:run_metrics", args=[run.pk])).json()
    last = payload["phases"][-1]
    assert f'<dt>Step</dt><dd>10 <span class="muted">({last["phase"]})</span>' in html
    assert f"<dt>Loss</dt><dd>{last['loss'][-1]:.4f}</dd>" in html and "<dt>Epoch</dt><dd>5.00</dd>" in html
    assert "<dt>Phase progress</dt><dd>0 of 1 (0%)</dd>" in html


def test_a_macro_f1_on_few_test_items_carries_a_warning_on_the_run_page_and_in_the_comparison(
    client, clinician, make_run, settings
):
    settings.SMALL_TEST_SET_ITEMS = 30
    results = {"macro_f1": {"estimate": 0.6, "low": 0.5, "high": 0.7}, "per_task": {"heart-rate": 0.6}, "n_test": 9}
    small = make_run(kind="heads", status="done", results=results)
    large = make_run(kind="heads", status="done", results={**results, "n_test": 30})
    client.force_login(clinician)
    warning = "Measured on only 9 test items (fewer than 30)"
    assert warning in client.get(reverse("training:run_detail", args=[small.pk])).content.decode()
    assert "Measured on only" not in client.get(reverse("training:run_detail", args=[large.pk])).content.decode()
    compared = client.get(reverse("training:compare") + f"?runs={small.pk}&runs={large.pk}").content.decode()
    assert compared.count("Measured on only") == 1 and warning in compared
    settings.SMALL_TEST_SET_ITEMS = 5
    assert "Measured on only" not in client.get(reverse("training:run_detail", args=[small.pk])).content.decode()


def test_a_resumed_run_reads_queued_without_the_phase_it_was_cancelled_in(client, researcher, make_run):
    from webapp.training import runs

    run = runs.claim(make_run().pk, worker="w1")
    runs.cancel(run)
    run.refresh_from_db()
    runs.cancelled(run)  # the worker stopped: phase "cancelled"
    client.force_login(researcher)
    client.post(reverse("training:run_resume", args=[run.pk]))
    html = client.get(reverse("training:run_detail", args=[run.pk]), headers={"HX-Request": "true"}).content.decode()
    status_line = html[html.index('<span class="status') : html.index("</p>")]
    assert "Queued" in status_line and "cancel" not in status_line.lower()
    assert "waiting for a training worker" in status_line
    listed = client.get(reverse("training:run_list")).content.decode()
    row = listed[listed.index(f'href="/training/{run.pk}/"') :]
    assert "cancelled" not in row[: row.index("</tr>")].lower()
