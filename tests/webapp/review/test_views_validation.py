"""The validation workflow through the pages: draw, judge with y/n, tally, adopt."""

import pytest
from django.urls import reverse

from ml.peaks import PeakParams
from webapp.corpus.models import Note
from webapp.pipeline.models import PeakProfile
from webapp.review.models import ValidationJudgement, ValidationSet

from .fabricate import TEXT, add_map


@pytest.fixture
def notes(corpus, tasks, base):
    for i in range(3):
        note = Note.objects.create(corpus=corpus, external_id=f"v{i}", text=TEXT)
        add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.45})


def draw(client, corpus, base, grid="1 1.0 0.2 0.4\n1 1.0 0.5 0.6", size=2):
    return client.post(
        reverse("review:validation_list", args=[corpus.pk]),
        {
            "name": "round-1",
            "model": base.pk,
            "method": "attnlrp",
            "template": "en",
            "size": size,
            "seed": 0,
            "grid": grid,
        },
    )


def test_a_clinician_runs_a_round_and_adopts_the_recommendation(client, clinician, corpus, base, notes):
    client.force_login(clinician)
    response = draw(client, corpus, base)
    vset = ValidationSet.objects.get()
    assert response["Location"] == reverse("review:validation_round", args=[vset.pk])
    assert len(vset.items) == 2 and len(vset.grid) == 2
    for _ in range(10):
        page = client.get(reverse("review:validation_round", args=[vset.pk]))
        if page.status_code == 302:
            break
        content = page.content.decode()
        assert "semantically reasonable" in content and "heart rate" in content
        position = int(content.split('name="position" value="')[1].split('"')[0])
        setting = int(content.split('name="setting" value="')[1].split('"')[0])
        client.post(
            reverse("review:validation_judge", args=[vset.pk]),
            {"position": position, "setting": setting, "answer": "yes" if setting == 1 else "no"},
        )
    assert page["Location"] == reverse("review:validation_results", args=[vset.pk])
    assert ValidationJudgement.objects.count() == 4
    results = client.get(page["Location"]).content.decode()
    assert "Recommended: <strong>setting 2</strong>" in results
    client.post(reverse("review:validation_adopt", args=[vset.pk]), {"name": "validated", "setting": 1})
    assert PeakProfile.objects.get(name="validated").params == PeakParams(
        kernel_size=1, sigma=1.0, lower=0.5, upper=0.6
    )


def test_a_bad_grid_is_explained(client, clinician, corpus, base, notes):
    client.force_login(clinician)
    response = draw(client, corpus, base, grid="1 1.0 0.6 0.4\nthree")
    content = response.content.decode()
    assert response.status_code == 200 and not ValidationSet.objects.exists()
    assert "line 1" in content and "line 2" in content


def test_the_default_grid_is_the_papers(client, clinician, corpus, base):
    client.force_login(clinician)
    content = client.get(reverse("review:validation_list", args=[corpus.pk])).content.decode()
    assert "1 1 0.2 0.4" in content and "3 1 0.5 0.6" in content


def test_a_researcher_sees_the_results_not_the_round(client, researcher, corpus, base, notes, clinician):
    client.force_login(clinician)
    draw(client, corpus, base)
    vset = ValidationSet.objects.get()
    client.force_login(researcher)
    response = client.get(reverse("review:validation_round", args=[vset.pk]))
    assert response["Location"] == reverse("review:validation_results", args=[vset.pk])
    assert "No answers yet" in client.get(response["Location"]).content.decode()
