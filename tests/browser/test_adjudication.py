"""A curator settles disputed peaks of a round by keyboard in headless Chromium: every reviewer's
decision side by side, `x`/`a` decide, `k` goes back, `g` opens the task's guideline."""

import pytest

from tests.projects import default_project
from webapp.review.models import Adjudication

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def disputed_round(db, clinician, django_user_model):
    from tests.conftest import _make_user
    from tests.webapp.review.fabricate import TEXT, add_map
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.corpus.tasks import edit_task
    from webapp.pipeline.models import ModelVersion, PeakProfile
    from webapp.review import decisions, rounds

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    edit_task(heart, {"guideline": "Count the **current** rate."})
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    add_map(note, heart, base, {"130": 0.9, "tachycardic": 0.9})
    other = _make_user(django_user_model, "carl", "clinician")
    rnd = rounds.create_round(
        corpus, name="march", tasks=[heart], model=base, method="attnlrp", template="en", profile=sharp, k=2,
        reviewers=[clinician, other],
    )  # fmt: skip
    pair = rnd.pairs.get()
    ctx = decisions.PeakContext(note, heart, base, "attnlrp", "en", rnd.config_key)
    for reviewer, outcomes in ((clinician, ["accept", "accept"]), (other, ["reject", "reject"])):
        for (a, b), outcome in zip(pair.peaks, outcomes):
            decisions.decide(ctx, reviewer, start=a, end=b, decision=outcome, expected_version=0)
    curator = _make_user(django_user_model, "cora", "curator")
    return {"round": rnd, "pair": pair, "curator": curator}


def test_a_curator_adjudicates_by_keyboard(login, disputed_round):
    rnd, pair = disputed_round["round"], disputed_round["pair"]
    page = login(disputed_round["curator"])
    page.goto(f"/review/rounds/{rnd.pk}/adjudicate/")
    decisions_table = page.locator("#reviewer-decisions")
    assert "clara" in decisions_table.inner_text() and "carl" in decisions_table.inner_text()
    assert page.locator("#excerpt mark.peak").inner_text() == "130"
    page.keyboard.press("x")  # reject the first disputed peak; the page moves on to the next unsettled
    page.wait_for_function("() => document.querySelector('#excerpt mark.peak').textContent === 'tachycardic'")
    page.wait_for_load_state("load")  # its script listens: a key pressed before is lost
    page.keyboard.press("a")  # every peak settled: the page shows the first one again
    page.wait_for_selector("#adjudication-state:has-text('Rejected')")
    page.wait_for_load_state("load")
    assert {(a.start, a.decision) for a in Adjudication.objects.all()} == {
        (pair.peaks[0][0], "reject"),
        (pair.peaks[1][0], "accept"),
    }
    page.keyboard.press("j")
    page.wait_for_selector("#adjudication-state:has-text('Accepted')")
    page.wait_for_load_state("load")
    page.keyboard.press("k")
    page.wait_for_function("() => document.querySelector('#excerpt mark.peak').textContent === '130'")
    page.wait_for_load_state("load")
    assert not page.locator("#guideline .guideline-text").is_visible()
    page.keyboard.press("g")
    assert page.locator("#guideline .guideline-text").is_visible()


@pytest.fixture
def split_validation_set(db, clinician, django_user_model):
    from tests.conftest import _make_user
    from tests.webapp.review.fabricate import TEXT, add_map
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion
    from webapp.review.models import ValidationJudgement, ValidationSet

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    notes = [Note.objects.create(corpus=corpus, external_id=f"v{i}", text=TEXT) for i in range(2)]
    for note in notes:
        add_map(note, heart, base, {"130": 0.9, "tachycardic": 0.45})
    vset = ValidationSet.objects.create(
        corpus=corpus, model_version=base, method="attnlrp", template="en", name="thresholds", size=2,
        items=[[n.pk, heart.pk] for n in notes], notes_available=2,
        grid=[{"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}],
    )  # fmt: skip
    other = _make_user(django_user_model, "carl", "clinician")
    for note in notes:  # both notes split: clara yes, carl no
        for reviewer, answer in ((clinician, True), (other, False)):
            ValidationJudgement.objects.create(
                validation_set=vset, note=note, task=heart, setting=0, reviewer=reviewer, reasonable=answer
            )
    return {"set": vset, "curator": _make_user(django_user_model, "cora", "curator")}


def test_a_curator_settles_split_validation_answers_by_keyboard(login, split_validation_set):
    from webapp.review.models import ValidationVerdict

    vset = split_validation_set["set"]
    page = login(split_validation_set["curator"])
    page.goto(f"/review/validation/{vset.pk}/results/")
    page.click("#settle-link")
    # Each key is pressed once the page's script listens (its load event): a key pressed while
    # review.js is still loading is lost, as it would be for a person.
    page.wait_for_load_state("load")
    answers = page.locator("#reviewer-answers").inner_text()
    assert "clara" in answers and "carl" in answers
    assert page.locator("#note-text mark.peak").count() >= 1
    page.keyboard.press("y")  # the first split: reasonable; the page moves on to the next unsettled
    page.wait_for_selector("nav[aria-label='Split answers'] :text('Split 2 of 2')")
    page.wait_for_load_state("load")
    page.keyboard.press("n")
    page.wait_for_selector("#settle-state:has-text('Settled')")
    assert sorted(ValidationVerdict.objects.values_list("reasonable", flat=True)) == [False, True]
    page.wait_for_load_state("load")
    page.keyboard.press("k")
    page.wait_for_selector("#settle-state:has-text('Settled: reasonable by cora')")
    page.wait_for_load_state("load")
    page.goto(f"/review/validation/{vset.pk}/results/")
    assert page.locator("#recommendation").inner_text().endswith("1 of 2 judged notes reasonable.")
