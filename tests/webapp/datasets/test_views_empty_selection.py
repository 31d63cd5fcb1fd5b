"""A selection that gives no examples is said before the build, and an empty build offers nothing
to download."""

import pytest
from django.urls import reverse

from webapp.corpus.models import Note
from webapp.datasets import building
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.review.models import ValidationSet

from .fabricate import PEAKS, TEXT, add_map
from .test_views_build_estimate import form_data


@pytest.fixture
def no_queue(monkeypatch):
    monkeypatch.setattr("webapp.lifecycle.queue.send", lambda task, *ids: len(ids))


def hold_back(note, model, tasks):
    """A threshold-validation set holding the note back from every dataset."""
    return ValidationSet.objects.create(
        corpus=note.corpus,
        model_version=model,
        method="attnlrp",
        template="en",
        name="val",
        items=[[note.pk, tasks["heart"].pk]],
        grid=[],
    )


def test_a_selection_held_back_entirely_for_validation_is_refused_before_the_build(
    client, researcher, corpus, model, sharp, maps, note, tasks, no_queue
):
    hold_back(note, model, tasks)
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp))
    html = response.content.decode()
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert "This selection gives 0 examples" in html and "held back for threshold validation" in html


def test_the_live_estimate_says_0_examples_before_the_launch(
    client, researcher, corpus, model, sharp, maps, note, tasks
):
    hold_back(note, model, tasks)
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert 'id="launch-estimate"' in html and "This selection gives 0 examples" in html


def test_the_estimate_counts_only_the_maps_the_build_reads(client, researcher, corpus, model, sharp, maps, note, tasks):
    other = Note.objects.create(corpus=corpus, external_id="n2", text=TEXT)
    add_map(other, tasks["heart"], model, PEAKS["heart"])
    hold_back(note, model, tasks)  # n1's 3 maps of tasks not held out are skipped by the build
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp), headers={"HX-Request": "true"})
    assert "<strong>1 maps</strong>" in response.content.decode()


@pytest.fixture
def empty_build(make_dataset, maps, note, model, tasks):
    """A build launched before the validation set was drawn: it ends DONE with 0 examples."""
    hold_back(note, model, tasks)
    dataset = make_dataset()
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    assert dataset.is_done and dataset.example_count == 0
    return dataset


def test_a_build_with_0_examples_offers_no_download_and_says_why(client, researcher, empty_build):
    client.force_login(researcher)
    html = client.get(reverse("datasets:detail", args=[empty_build.pk])).content.decode()
    assert "0 examples" in html and "nothing to download" in html
    assert reverse("datasets:download", args=[empty_build.pk, "jsonl"]) not in html
    assert "Prepare a Hugging Face dataset" not in html


def test_an_empty_dataset_cannot_be_downloaded_or_exported_by_its_address(client, researcher, empty_build):
    client.force_login(researcher)
    response = client.get(reverse("datasets:download", args=[empty_build.pk, "jsonl"]), follow=True)
    assert "has 0 examples" in response.content.decode()
    response = client.post(reverse("datasets:export", args=[empty_build.pk]), {"format": "hf"}, follow=True)
    assert "has 0 examples" in response.content.decode() and not DatasetExport.objects.exists()
