"""Live tuning: the stored sample, the corpus preview under a setting, saving profiles."""

import pytest

from ml.peaks import PeakParams
from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.review import tuning
from webapp.review.models import MapSample
from webapp.review.selection import Selection

from .fabricate import TEXT, add_map


@pytest.fixture
def sel(base, sharp):
    return Selection(None, base, "attnlrp", "en", sharp, sharp.params)


@pytest.fixture
def many(corpus, tasks, base):
    """20 notes: even ones have two heart-rate peaks (130, tachycardic), odd ones one."""
    for i in range(20):
        note = Note.objects.create(corpus=corpus, external_id=f"t{i:02d}", text=TEXT)
        peaked = {"130": 0.9, "tachycardic": 0.5} if i % 2 == 0 else {"130": 0.9, "tachycardic": 0.3}
        add_map(note, tasks["heart"], base, peaked)


def test_the_sample_is_drawn_once_deterministically_and_stored(corpus, sel, many):
    first = tuning.sample_for(corpus, sel, size=8, seed=3)
    assert len(first.map_ids) == 8 and first.population == 20 and first.map_ids == sorted(first.map_ids)
    assert tuning.sample_for(corpus, sel, size=8, seed=3).pk == first.pk
    redrawn = tuning.sample_for(corpus, sel, size=8, seed=3, redraw=True)
    assert redrawn.pk != first.pk and redrawn.map_ids == first.map_ids  # same seed, same maps
    assert MapSample.objects.count() == 1


def test_a_sample_larger_than_the_maps_takes_them_all(corpus, sel, many):
    assert len(tuning.sample_for(corpus, sel, size=2_000).map_ids) == 20


def test_no_maps_no_sample(corpus, sel):
    assert tuning.sample_for(corpus, sel) is None


def test_the_preview_applies_the_dsm_rules_to_the_sample(corpus, sel, many):
    result = tuning.preview(tuning.sample_for(corpus, sel), sel.params)
    assert result.pairs == 20 and result.two_peaks == 10 and result.share_two_peaks == 0.5
    assert result.examples == 1  # ten identical notes: "tachycardic" masked once, the rest de-duplicated
    assert result.duplicates == 9
    assert dict((label, n) for label, n, _ in result.histogram)["1"] == 10
    before, label, after = result.shown[0]
    assert label == "tachycardic" and before.endswith("bpm,  ") and after.startswith("; febrile")


def test_moving_a_threshold_changes_the_preview(corpus, sel, many):
    sample = tuning.sample_for(corpus, sel)
    higher = tuning.preview(sample, sel.params.with_(upper=0.6))
    assert higher.two_peaks == 0 and higher.examples == 0
    lower = tuning.preview(sample, sel.params.with_(lower=0.2, upper=0.25))
    assert lower.two_peaks == 20


def test_saving_a_profile_makes_a_new_version_of_an_existing_name(clinician, sharp):
    params = PeakParams(kernel_size=3, sigma=1.5, lower=0.3, upper=0.5, trim=False)
    profile = tuning.save_profile("sharp", params, clinician, project=default_project())
    assert (profile.name, profile.version, profile.created_by) == ("sharp", 2, clinician)
    assert profile.params == params and profile.trim is False
    event = AuditEvent.objects.get(object_id=str(profile.pk))
    assert event.details["kind"] == "peak_profile" and event.details["params"] == params.to_dict()
    assert tuning.save_profile("fresh", params, clinician, project=default_project()).version == 1
