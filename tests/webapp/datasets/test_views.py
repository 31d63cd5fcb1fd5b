"""Dataset pages x roles, the build form, the live status poll and the downloads."""

import io
import zipfile

import pytest
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.pipeline.models import JobStatus

ROLES = ["clinician", "researcher", "admin", "norole"]


@pytest.fixture
def user_for(clinician, researcher, admin_user, norole_user):
    return {"clinician": clinician, "researcher": researcher, "admin": admin_user, "norole": norole_user}


def form_data(corpus, model, profile, **extra):
    return {
        "name": "first",
        "corpus": corpus.pk,
        "model_version": model.pk,
        "method": "attnlrp",
        "template": "en",
        "profile": profile.pk,
        "mode": "dsm",
        "seed": 0,
        "mask_token": "<mask>",
        **extra,
    }


@pytest.mark.parametrize("role", ROLES)
def test_pages_answer_each_role_as_its_capabilities_say(client, user_for, role, built):
    client.force_login(user_for[role])
    viewer = role != "norole"
    launcher = role in ("researcher", "admin")
    # A dataset of a project the user is not in is not found; one of their own that their role may
    # not act on is refused (webapp.projects.scoping).
    refused = 403 if viewer else 404
    assert client.get(reverse("datasets:list")).status_code == (200 if viewer else 403)
    assert client.get(reverse("datasets:detail", args=[built.pk])).status_code == (200 if viewer else 404)
    assert client.get(reverse("datasets:new")).status_code == (200 if launcher else 403)
    download = client.get(reverse("datasets:download", args=[built.pk, "jsonl"]))
    assert download.status_code == (200 if launcher else refused)
    assert client.post(reverse("datasets:export", args=[built.pk])).status_code == (302 if launcher else refused)
    assert client.post(reverse("datasets:build_again", args=[built.pk])).status_code == (302 if launcher else refused)


def test_anonymous_users_are_sent_to_login(client, built):
    response = client.get(reverse("datasets:detail", args=[built.pk]))
    assert response.status_code == 302 and "login" in response["Location"]


def test_the_list_shows_name_version_status_mode_and_examples(client, clinician, built):
    client.force_login(clinician)
    html = client.get(reverse("datasets:list")).content.decode()
    assert "ds" in html and "DecSelfMask (peaks masked)" in html and ">Done<" in html
    assert '<td class="num">2</td>' in html
    assert "Build a dataset" not in html  # a clinician may not build


def test_the_detail_page_shows_the_statistics_to_a_clinician_without_export_buttons(client, clinician, built):
    client.force_login(clinician)
    html = client.get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert "Peaks per note-task pair" in html and "Examples per task" in html and 'class="bar"' in html
    assert "Download JSONL" not in html and "Build again" not in html
    assert "hx-trigger" not in html


def test_the_build_form_queues_a_build_after_commit(
    client, researcher, corpus, model, sharp, maps, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("webapp.lifecycle.queue.send", lambda task, *ids: sent.append((task, *ids)))
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp))
    dataset = DatasetVersion.objects.get(name="first")
    assert response.status_code == 302 and response["Location"] == reverse("datasets:detail", args=[dataset.pk])
    assert len(callbacks) == 1 and sent == [("workers.datasets.build_dataset", dataset.pk)]
    assert dataset.status == JobStatus.QUEUED and dataset.version == 1 and dataset.created_by == researcher
    assert dataset.filters == {"exclude_held_out": True}
    assert AuditEvent.objects.filter(action=AuditEvent.Action.LAUNCH_JOB, object_id=str(dataset.pk)).exists()


def test_the_same_name_makes_the_next_version(
    client, researcher, corpus, model, sharp, maps, built, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=False):
        client.post(reverse("datasets:new"), form_data(corpus, model, sharp, name="ds"))
    assert sorted(DatasetVersion.objects.filter(name="ds").values_list("version", flat=True)) == [1, 2]


def test_the_form_keeps_the_filters(
    client, researcher, corpus, model, sharp, maps, tasks, note, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    data = form_data(
        corpus, model, sharp, tasks=[tasks["heart"].pk, tasks["heldout"].pk], include_held_out="on", notes="n1"
    )
    with django_capture_on_commit_callbacks(execute=False):
        client.post(reverse("datasets:new"), data)
    dataset = DatasetVersion.objects.get(name="first")
    assert dataset.filters == {
        "exclude_held_out": False,
        "tasks": sorted([tasks["heart"].pk, tasks["heldout"].pk]),
        "notes": [note.pk],
    }


def test_a_held_out_task_needs_the_checkbox(client, researcher, corpus, model, sharp, maps, tasks):
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, tasks=[tasks["heldout"].pk]))
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert "heldout is held out" in response.content.decode()


def test_no_matching_maps_is_said_in_plain_words(client, researcher, corpus, model, sharp, maps):
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, template="it"))
    assert "No relevance maps match these choices" in response.content.decode()
    assert not DatasetVersion.objects.exists()


def test_unknown_note_ids_are_listed(client, researcher, corpus, model, sharp, maps):
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, notes="n1, nope"))
    assert "1 note id(s) are not in this corpus: nope" in response.content.decode()


def test_a_long_unknown_note_id_is_quoted_short(client, researcher, corpus, model, sharp, maps):
    client.force_login(researcher)
    pasted = "x" * 5000
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, notes=f"n1 {pasted}"))
    assert response.context["form"].errors["notes"] == ["1 note id(s) are not in this corpus: " + "x" * 40 + "…"]
    assert pasted in response.content.decode()  # the field keeps what was pasted, to correct it
    assert not DatasetVersion.objects.exists()


@pytest.mark.parametrize("hidden", ["\u202e", "\u200b"])
def test_a_dataset_name_with_a_hidden_character_is_refused(client, researcher, corpus, model, sharp, maps, hidden):
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, name=f"ward{hidden}gpj.exe"))
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert f"The name contains the invisible format character U+{ord(hidden):04X} at offset 4." in (
        response.content.decode()
    )


@pytest.mark.parametrize("seed", ["-1", str(10**30)])
def test_a_seed_outside_what_is_stored_is_refused(client, researcher, corpus, model, sharp, maps, seed):
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, seed=seed))
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert response.context["form"].errors["seed"]


def test_a_clinician_cannot_post_the_build_form(client, clinician, corpus, model, sharp, maps):
    client.force_login(clinician)
    assert client.post(reverse("datasets:new"), form_data(corpus, model, sharp)).status_code == 403
    assert not DatasetVersion.objects.exists()


def test_the_status_poll_continues_while_the_build_runs(client, clinician, make_dataset):
    dataset = make_dataset()
    DatasetVersion.objects.filter(pk=dataset.pk).update(status=JobStatus.RUNNING, maps_total=10, maps_done=4)
    client.force_login(clinician)
    response = client.get(reverse("datasets:detail", args=[dataset.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<h1>" not in html
    assert 'hx-trigger="every 2s"' in html and "4 of 10 relevance maps" in html


def test_the_status_poll_stops_with_286_when_the_build_ends(client, clinician, built):
    client.force_login(clinician)
    response = client.get(reverse("datasets:detail", args=[built.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 286
    assert "hx-trigger" not in html and "2 examples" in html and "Peaks per note-task pair" in html


def test_a_failed_build_shows_its_message(client, clinician, make_dataset):
    dataset = make_dataset()
    DatasetVersion.objects.filter(pk=dataset.pk).update(status=JobStatus.FAILED, error="No relevance maps match.")
    client.force_login(clinician)
    response = client.get(reverse("datasets:detail", args=[dataset.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 286 and "No relevance maps match." in response.content.decode()


def test_the_poll_continues_while_an_export_is_prepared(client, researcher, built):
    DatasetExport.objects.create(dataset=built, format="hf")
    client.force_login(researcher)
    response = client.get(reverse("datasets:detail", args=[built.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "hx-trigger" in response.content.decode()


def test_the_download_streams_a_zip_and_is_audited(client, researcher, built):
    client.force_login(researcher)
    response = client.get(reverse("datasets:download", args=[built.pk, "parquet"]))
    assert response.streaming and response["Content-Type"] == "application/zip"
    assert 'filename="ds-v1-parquet.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == ["examples.parquet", "manifest.json"]
    event = AuditEvent.objects.get(action=AuditEvent.Action.EXPORT)
    assert event.actor == researcher and event.details["format"] == "parquet" and event.details["rows"] == 2


def test_an_unfinished_dataset_cannot_be_downloaded(client, researcher, make_dataset):
    dataset = make_dataset()
    client.force_login(researcher)
    response = client.get(reverse("datasets:download", args=[dataset.pk, "jsonl"]), follow=True)
    assert "Only a finished dataset can be exported" in response.content.decode()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).exists()


def test_preparing_an_export_queues_it_after_commit(
    client, researcher, built, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr("webapp.lifecycle.queue.send", lambda task, *ids: sent.append((task, *ids)))
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("datasets:export", args=[built.pk]), {"format": "hf"})
    job = DatasetExport.objects.get()
    assert response.status_code == 302 and sent == [("workers.datasets.export_dataset", job.pk)]
    assert job.created_by == researcher


def test_a_prepared_export_downloads_as_a_zip(client, researcher, built, settings, tmp_path):
    from webapp.datasets import export

    settings.DATA_DIR = tmp_path
    job = DatasetExport.objects.create(dataset=built, format="jsonl", created_by=researcher)
    export.run_export(export.claim_export(job.pk))
    client.force_login(researcher)
    html = client.get(reverse("datasets:detail", args=[built.pk])).content.decode()
    url = reverse("datasets:export_download", args=[built.pk, job.pk])
    assert url in html
    response = client.get(url)
    names = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()
    assert names == ["examples.jsonl", "manifest.json"]


def test_a_clinician_cannot_download_a_prepared_export(client, clinician, built):
    job = DatasetExport.objects.create(dataset=built, format="hf", status=JobStatus.DONE, path="x")
    client.force_login(clinician)
    assert client.get(reverse("datasets:export_download", args=[built.pk, job.pk])).status_code == 403


def test_building_a_done_dataset_again_makes_a_new_version(
    client, researcher, built, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("datasets:build_again", args=[built.pk]))
    new = DatasetVersion.objects.get(name="ds", version=2)
    assert response["Location"] == reverse("datasets:detail", args=[new.pk]) and len(callbacks) == 1
    assert (new.profile_id, new.mode, new.filters) == (built.profile_id, built.mode, built.filters)
    assert new.status == JobStatus.QUEUED
    built.refresh_from_db()
    assert built.status == JobStatus.DONE and built.examples.count() == 2  # never changed in place


def test_building_a_failed_dataset_again_requeues_it(
    client, researcher, make_dataset, django_capture_on_commit_callbacks
):
    dataset = make_dataset()
    DatasetVersion.objects.filter(pk=dataset.pk).update(status=JobStatus.FAILED, error="x")
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(reverse("datasets:build_again", args=[dataset.pk]))
    dataset.refresh_from_db()
    assert (dataset.status, dataset.error, dataset.version, len(callbacks)) == ("queued", "", 1, 1)


def test_jobs_of_two_relevance_configurations_are_refused_on_the_form(client, researcher, corpus, model, sharp, maps):
    from ml.relevance import RelevanceConfig
    from webapp.pipeline.models import RelevanceJob

    span = RelevanceConfig(explain="span")
    default = RelevanceJob.objects.create(corpus=corpus, model_version=model, status=JobStatus.DONE)
    other = RelevanceJob.objects.create(
        corpus=corpus,
        model_version=model,
        status=JobStatus.DONE,
        explain="span",
        config=span.to_dict(),
        config_key=span.key,
    )
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, jobs=[default.pk, other.pk]))
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert "different configurations" in response.content.decode()
