"""A validation set holds the notes asked for or says why not; retiring a set gives its notes
back to dataset builds, keeps its answers, is audited, and is a POST by whoever may retire it."""

import pytest
from django.urls import reverse

from ml.relevance import default_config_key
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.pipeline.models import RelevanceMap
from webapp.review import validation
from webapp.review.models import MapSample, ValidationJudgement, ValidationSet
from webapp.review.selection import Selection

from .fabricate import TEXT, add_map

SHARP = {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}


@pytest.fixture
def notes(corpus, tasks, base):
    made = []
    for i in range(4):
        note = Note.objects.create(corpus=corpus, external_id=f"v{i}", text=TEXT)
        add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.45})
        add_map(note, tasks["pacemaker"], base, {"Pacemaker": 0.9})
        made.append(note)
    return made


@pytest.fixture
def sel(base, sharp):
    return Selection(None, base, "attnlrp", "en", sharp, sharp.params)


def draw_page(client, corpus, base, size):
    return client.post(
        reverse("review:validation_list", args=[corpus.pk]),
        {
            "name": "round-1",
            "model": base.pk,
            "method": "attnlrp",
            "template": "en",
            "size": size,
            "seed": 0,
            "grid": "1 1.0 0.2 0.4",
        },
        follow=True,
    )


def test_a_draw_short_of_notes_says_only_so_many_notes_have_maps(corpus, sel, notes, clinician):
    vset = validation.draw(corpus, sel, name="big", size=500, seed=0, grid=[SHARP], actor=clinician)
    assert len(vset.items) == 4 and vset.size == 500 and vset.notes_available == 4
    assert vset.shortfall.startswith("500 notes asked for, 4 drawn: only 4 notes have relevance maps of base-model")


def test_a_full_draw_has_no_shortfall(corpus, sel, notes, clinician):
    vset = validation.draw(corpus, sel, name="small", size=3, seed=0, grid=[SHARP], actor=clinician)
    assert len(vset.items) == 3 and vset.shortfall == "" and vset.notes_available is None


def test_notes_the_stored_sample_missed_are_drawn_from_the_other_notes(corpus, sel, notes, base, clinician):
    """A sample holding one note (many tasks a note, or maps deleted since) no longer shrinks the set."""
    one_map = notes[2].pk
    map_id = RelevanceMap.objects.filter(note_id=one_map).order_by("pk").values_list("pk", flat=True)[0]
    MapSample.objects.create(
        corpus=corpus,
        model_version=base,
        method="attnlrp",
        template="en",
        config_key=default_config_key("attnlrp", "en"),
        seed=5,
        size=2000,
        population=1,
        map_ids=[map_id],
    )
    first = validation.draw(corpus, sel, name="a", size=3, seed=5, grid=[SHARP], actor=clinician)
    again = validation.draw(corpus, sel, name="b", size=3, seed=5, grid=[SHARP], actor=clinician)
    assert len(first.items) == 3 and len({n for n, _ in first.items}) == 3 and first.shortfall == ""
    assert first.items[0][0] == one_map and first.items == again.items


def test_the_draw_result_and_the_sets_page_say_why_it_is_short(client, clinician, corpus, base, notes):
    client.force_login(clinician)
    content = draw_page(client, corpus, base, size=10).content.decode()
    assert "10 notes asked for, 4 drawn: only 4 notes have relevance maps" in content
    vset = ValidationSet.objects.get()
    results = client.get(reverse("review:validation_results", args=[vset.pk])).content.decode()
    assert 'id="shortfall"' in results and "only 4 notes have relevance maps" in results
    listing = client.get(reverse("review:validation_list", args=[corpus.pk])).content.decode()
    assert "of 10 asked" in listing


def test_retiring_frees_the_notes_keeps_the_answers_and_is_audited(client, researcher, corpus, sel, notes, clinician):
    vset = validation.draw(corpus, sel, name="val", size=2, seed=0, grid=[SHARP], actor=clinician)
    validation.judge(vset, clinician, position=0, setting=0, reasonable=True)
    assert validation.validation_note_ids(corpus.pk) == set(vset.note_ids)
    client.force_login(researcher)
    response = client.post(reverse("review:validation_retire", args=[vset.pk]))
    assert response["Location"] == reverse("review:validation_results", args=[vset.pk])
    vset.refresh_from_db()
    assert vset.is_retired and vset.retired_by == researcher
    assert validation.validation_note_ids(corpus.pk) == set()
    assert ValidationSet.objects.filter(pk=vset.pk).exists() and ValidationJudgement.objects.count() == 1
    event = AuditEvent.objects.get(details__kind="validation_set_retired")
    assert (event.actor, event.object_id, event.details["items"], event.details["judgements"]) == (
        researcher,
        str(vset.pk),
        2,
        1,
    )
    page = client.get(response["Location"]).content.decode()
    assert 'id="retired"' in page and "retired" in page and 'id="retire-button"' not in page


def test_retiring_twice_records_it_once(corpus, sel, notes, researcher, clinician):
    vset = validation.draw(corpus, sel, name="val", size=2, seed=0, grid=[SHARP], actor=clinician)
    assert validation.retire(vset, researcher) is True
    assert validation.retire(vset, researcher) is False
    assert AuditEvent.objects.filter(details__kind="validation_set_retired").count() == 1


def test_a_retired_set_takes_no_more_answers(client, corpus, sel, notes, clinician):
    vset = validation.draw(corpus, sel, name="val", size=2, seed=0, grid=[SHARP], actor=clinician)
    validation.retire(vset, clinician)
    with pytest.raises(validation.ValidationSetError):
        validation.judge(vset, clinician, position=0, setting=0, reasonable=True)
    client.force_login(clinician)
    response = client.get(reverse("review:validation_round", args=[vset.pk]))
    assert response["Location"] == reverse("review:validation_results", args=[vset.pk])
    assert not ValidationJudgement.objects.exists()


def test_retiring_is_a_post_with_a_confirmation(client, researcher, corpus, sel, notes, clinician):
    vset = validation.draw(corpus, sel, name="val", size=2, seed=0, grid=[SHARP], actor=clinician)
    client.force_login(researcher)
    assert client.get(reverse("review:validation_retire", args=[vset.pk])).status_code == 405
    page = client.get(reverse("review:validation_results", args=[vset.pk])).content.decode()
    form = page.split('id="retire-button"')[0].rsplit("<form", 1)[1]
    assert 'method="post"' in form and "data-confirm=" in form
    assert not ValidationSet.objects.get(pk=vset.pk).is_retired


def test_the_clinician_who_drew_a_set_may_retire_it_another_clinician_may_not(
    client, corpus, sel, notes, clinician, django_user_model
):
    from tests.conftest import _make_user

    other = _make_user(django_user_model, "carl", "clinician")
    vset = validation.draw(corpus, sel, name="val", size=2, seed=0, grid=[SHARP], actor=clinician)
    client.force_login(other)
    assert client.post(reverse("review:validation_retire", args=[vset.pk])).status_code == 403
    assert 'id="retire-button"' not in client.get(reverse("review:validation_results", args=[vset.pk])).content.decode()
    client.force_login(clinician)
    client.post(reverse("review:validation_retire", args=[vset.pk]))
    assert ValidationSet.objects.get(pk=vset.pk).is_retired


def test_a_user_without_a_role_cannot_retire(client, norole_user, corpus, sel, notes, clinician):
    vset = validation.draw(corpus, sel, name="val", size=2, seed=0, grid=[SHARP], actor=clinician)
    client.force_login(norole_user)
    # Not a member of the set's project: the set is not found (its existence is not disclosed).
    assert client.post(reverse("review:validation_retire", args=[vset.pk])).status_code == 404
    assert not ValidationSet.objects.get(pk=vset.pk).is_retired
