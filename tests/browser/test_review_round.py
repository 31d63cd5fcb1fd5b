"""A clinician's queue inside a review round, in headless Chromium: the round's page leads to
their pair under the round's setting, the keyboard decides its peak, and `q` serves the next one."""

import pytest

from tests.projects import default_project
from webapp.review.models import RoundClaim

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ward_round(db, clinician, django_user_model):
    from tests.conftest import _make_user
    from tests.webapp.review.fabricate import TEXT, add_map
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile
    from webapp.review import rounds

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    notes = [Note.objects.create(corpus=corpus, external_id=f"n{i}", text=TEXT) for i in range(3)]
    for note in notes:
        add_map(note, heart, base, {"130": 0.9})
    other = _make_user(django_user_model, "carl", "clinician")
    rnd = rounds.create_round(
        corpus, name="march", tasks=[heart], model=base, method="attnlrp", template="en", profile=sharp, k=1,
        reviewers=[clinician, other], guideline="Judge the **current** rate only.",
    )  # fmt: skip
    return {"round": rnd, "notes": notes}


def test_a_reviewer_works_through_their_share_of_a_round_by_keyboard(login, clinician, ward_round):
    rnd, notes = ward_round["round"], ward_round["notes"]
    page = login(clinician)
    page.goto(f"/review/rounds/{rnd.pk}/")
    page.click("#start-round")
    page.wait_for_selector("#note-text mark.peak.current")
    assert f"/notes/{notes[0].pk}/" in page.url and f"round={rnd.pk}" in page.url
    assert page.locator("#round-guideline strong", has_text="current").is_visible()
    page.keyboard.press("a")
    page.wait_for_selector("#peak-0.mine-accept")
    assert RoundClaim.objects.get(reviewer=clinician, pair__position=0).done is not None
    page.keyboard.press("q")  # k=1 and two reviewers: clara's share is pairs 0 and 2
    page.wait_for_url(f"**/notes/{notes[2].pk}/**")
    page.wait_for_selector("#note-text mark.peak.current")
    page.keyboard.press("a")
    page.wait_for_selector("#peak-0.mine-accept")
    page.keyboard.press("q")
    page.wait_for_selector("#round-queue-empty")
    assert RoundClaim.objects.filter(reviewer=clinician, done__isnull=False).count() == 2
