"""The corpus preview fragment and saving a slider setting as a profile."""

from django.urls import reverse

from ml.peaks import PeakParams
from webapp.pipeline.models import PeakProfile
from webapp.review.models import MapSample

from .fabricate import query


def test_the_preview_shows_the_sample_and_the_dsm_figures(client, clinician, corpus, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    response = client.get(
        reverse("review:preview", args=[corpus.pk]), query(tasks["heart"], base, sharp), HTTP_HX_REQUEST="true"
    )
    content = response.content.decode()
    assert "<html" not in content
    assert "sample of <strong>2</strong> of 2 maps" in content  # the base model's two maps of the note
    assert "100.0%" in content and 'id="preview-examples"' in content
    assert MapSample.objects.count() == 1


def test_without_htmx_the_preview_is_a_page(client, researcher, corpus, tasks, base, sharp, maps):
    client.force_login(researcher)
    response = client.get(reverse("review:preview", args=[corpus.pk]), query(tasks["heart"], base, sharp))
    content = response.content.decode()
    assert "<html" in content and "Corpus preview" in content
    assert "Redraw the sample" in content  # researchers may tune (LAUNCH)


def test_a_clinician_saves_the_slider_setting_as_a_new_profile_version(client, clinician, note, sharp):
    client.force_login(clinician)
    back = reverse("review:note", args=[note.corpus_id, note.pk]) + f"?task=1&profile={sharp.pk}&lower=0.3"
    response = client.post(
        reverse("review:save_profile"),
        {"corpus": note.corpus_id, "name": "sharp", "k": 1, "sigma": 1, "lower": 0.3, "upper": 0.4, "next": back},
    )
    profile = PeakProfile.objects.get(name="sharp", version=2)
    assert profile.params == PeakParams(kernel_size=1, sigma=1.0, lower=0.3, upper=0.4)
    assert response.status_code == 302
    assert f"profile={profile.pk}" in response["Location"] and "lower=" not in response["Location"]


def test_an_invalid_profile_is_not_saved_and_an_outside_next_is_ignored(client, clinician):
    client.force_login(clinician)
    response = client.post(
        reverse("review:save_profile"),
        {"name": "bad name!", "k": 2, "sigma": 1, "lower": 0.5, "upper": 0.4, "next": "https://evil.example/"},
    )
    assert response["Location"] == reverse("review:index")
    assert not PeakProfile.objects.filter(name__startswith="bad").exists()


def test_redrawing_the_sample_replaces_it(client, clinician, corpus, tasks, base, sharp, maps):
    client.force_login(clinician)
    client.get(reverse("review:preview", args=[corpus.pk]), query(tasks["heart"], base, sharp), HTTP_HX_REQUEST="true")
    first = MapSample.objects.get().pk
    client.post(
        reverse("review:redraw_sample", args=[corpus.pk]), {"model": base.pk, "method": "attnlrp", "template": "en"}
    )
    assert MapSample.objects.get().pk != first
