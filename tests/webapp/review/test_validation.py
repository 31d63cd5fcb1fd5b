"""Threshold validation: drawing held-out notes, judging settings, the tally and its recommendation."""

import math

import pytest

from ml.peaks import PeakParams
from webapp.corpus.models import Annotation, Note
from webapp.pipeline.models import PeakProfile
from webapp.review import validation
from webapp.review.models import ValidationJudgement, ValidationSet
from webapp.review.selection import Selection

from .fabricate import TEXT, add_map, tokens, word_span

SHARP = {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}
STRICT = {"kernel_size": 1, "sigma": 1.0, "lower": 0.5, "upper": 0.6}
SMOOTH = {"kernel_size": 3, "sigma": 1.0, "lower": 0.2, "upper": 0.4}


@pytest.fixture
def notes(corpus, tasks, base):
    made = []
    for i in range(4):
        note = Note.objects.create(corpus=corpus, external_id=f"v{i}", text=TEXT)
        add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.45})
        made.append(note)
    return made


@pytest.fixture
def vset(corpus, base, notes, tasks):
    return ValidationSet.objects.create(
        corpus=corpus,
        model_version=base,
        method="attnlrp",
        template="en",
        name="val",
        items=[[n.pk, tasks["heart"].pk] for n in notes[:3]],
        grid=[SHARP, STRICT, SMOOTH],
    )


def judge(vset, user, note, setting, yes):
    ValidationJudgement.objects.create(
        validation_set=vset, note=note, task_id=vset.items[0][1], setting=setting, reviewer=user, reasonable=yes
    )


def test_drawing_is_seeded_distinct_and_holds_the_notes_out(corpus, base, notes, sharp, clinician):
    sel = Selection(None, base, "attnlrp", "en", sharp, sharp.params)
    first = validation.draw(corpus, sel, name="a", size=3, seed=7, grid=[SHARP], actor=clinician)
    again = validation.draw(corpus, sel, name="b", size=3, seed=7, grid=[SHARP], actor=clinician)
    assert first.items == again.items
    assert len({n for n, _ in first.items}) == 3
    assert validation.validation_note_ids(corpus.pk) == {n for n, _ in first.items}
    assert validation.validation_note_ids(corpus.pk + 1) == set()


def test_the_next_item_goes_note_by_note_and_setting_by_setting(vset, notes, clinician):
    assert validation.next_item(vset, clinician) == (0, notes[0].pk, vset.items[0][1], 0)
    judge(vset, clinician, notes[0], 0, True)
    assert validation.next_item(vset, clinician)[3] == 1


def test_an_answer_counts_for_every_setting_with_the_same_peaks_on_that_note(vset, notes, clinician):
    spans = validation.spans_per_setting(vset, notes[0], validation._arrays(vset, notes[0].pk, vset.items[0][1]))
    assert spans[0] == (word_span(TEXT, "130"), word_span(TEXT, "tachycardic"))
    assert spans[1] == (word_span(TEXT, "130"),)
    recorded = validation.judge(vset, clinician, position=0, setting=1, reasonable=False)
    same = [s for s in range(3) if spans[s] == spans[1]]
    assert recorded == same
    assert set(ValidationJudgement.objects.values_list("setting", flat=True)) == set(same)


def test_the_tally_counts_majorities_and_recommends_the_most_reasonable_setting(vset, notes, clinician, admin_user):
    for note in notes[:3]:
        judge(vset, clinician, note, 0, note != notes[2])  # setting 1: yes, yes, no
        judge(vset, clinician, note, 1, True)  # setting 2: yes, yes, yes from the clinician...
        judge(vset, clinician, note, 2, note == notes[0])  # setting 3: yes, no, no
    judge(vset, admin_user, notes[0], 1, False)  # ... a 1-1 tie on note 0 is not reasonable
    rows, best = validation.tally(vset)
    assert [(r.judged, r.reasonable) for r in rows] == [(3, 2), (3, 2), (3, 1)]
    assert best.index == 0 and rows[0].recommended and not rows[1].recommended  # a tie goes to the first
    judge(vset, admin_user, notes[1], 0, False)
    rows, best = validation.tally(vset)
    assert [r.reasonable for r in rows] == [1, 2, 1] and best.index == 1


def test_no_answer_no_recommendation(vset):
    rows, best = validation.tally(vset)
    assert best is None and all(r.judged == 0 for r in rows)


def test_gold_evidence_gives_the_automatic_agreement(vset, notes, tasks):
    Annotation.objects.create(
        note=notes[0], task=tasks["heart"], label="y", annotator_name="gold", evidence=[list(word_span(TEXT, "130"))]
    )
    rows, _ = validation.tally(vset)
    assert rows[0].gold_items == 1
    # SHARP peaks: "130" (1 token, gold) and "tachycardic" (1 token, not gold): P 1/2, R 1 -> F1 2/3
    assert rows[0].f1 == pytest.approx(2 / 3)
    assert rows[1].f1 == pytest.approx(1.0)
    n_tokens = len(tokens(TEXT))
    assert rows[0].mass_ratio == pytest.approx((0.9 / 1.35) / (1 / n_tokens), rel=1e-2)
    assert not math.isnan(rows[2].mass_ratio)


def test_adopting_a_setting_makes_a_profile_and_a_new_version_of_the_name(vset, clinician):
    first = validation.adopt(vset, 1, "validated", clinician)
    second = validation.adopt(vset, 0, "validated", clinician)
    assert (first.version, second.version) == (1, 2)
    assert PeakProfile.objects.get(pk=first.pk).params == PeakParams.from_mapping(STRICT)
    with pytest.raises(validation.ValidationSetError):
        validation.adopt(vset, 9, "x", clinician)
