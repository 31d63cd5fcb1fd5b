"""A disagreement on an added span in a round, settled by a curator in headless Chromium: one
reviewer marked words the model missed, the other finished the pair without them; the curator
sees both, keeps the words (`a`), and that choice is final."""

import pytest
from django.utils import timezone

from tests.projects import default_project
from webapp.review.models import SpanAdjudication

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def span_round(db, clinician, django_user_model):
    from tests.conftest import _make_user
    from tests.webapp.review.fabricate import TEXT, add_map
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile
    from webapp.review import rounds, spans
    from webapp.review.models import RoundClaim

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    add_map(note, heart, base, {"130": 0.9})
    other = _make_user(django_user_model, "carl", "clinician")
    rnd = rounds.create_round(
        corpus, name="march", tasks=[heart], model=base, method="attnlrp", template="en", profile=sharp, k=2,
        reviewers=[clinician, other],
    )  # fmt: skip
    pair = rnd.pairs.get()
    now = timezone.now()
    for reviewer in (clinician, other):
        RoundClaim.objects.create(round=rnd, pair=pair, reviewer=reviewer, claimed=now, expires=now, done=now)
    a = TEXT.index("febrile")
    spans.add(note, heart, clinician, start=a, end=a + len("febrile 38.5"), round=rnd)
    b = TEXT.index("Pacemaker")
    for reviewer in (clinician, other):  # both marked the pacemaker: no dispute there
        spans.add(note, heart, reviewer, start=b, end=b + 9, round=rnd)
    curator = _make_user(django_user_model, "cora", "curator")
    return {"round": rnd, "note": note, "curator": curator, "febrile": (a, a + len("febrile 38.5"))}


def test_a_curator_settles_a_disagreement_on_an_added_span(login, span_round):
    rnd = span_round["round"]
    page = login(span_round["curator"])
    page.goto(f"/review/rounds/{rnd.pk}/adjudicate/")
    page.click("#adjudicate-spans-link")
    page.wait_for_selector("#reviewer-spans")
    assert "1 disputed group" in page.locator("#span-adjudication-rule").inner_text()
    assert page.locator("#excerpt mark.added-group").inner_text() == "febrile 38.5"
    assert "clara" in page.locator("#reviewer-spans").inner_text()
    assert "1 of the 2 reviewers" in page.locator("#span-judges").inner_text()
    page.wait_for_load_state("load")
    page.keyboard.press("a")
    page.wait_for_selector("#adjudication-state:has-text('Accepted')")
    row = SpanAdjudication.objects.get()
    assert (row.decision, row.chosen_start, row.chosen_end) == ("accept", *span_round["febrile"])
    assert row.curator == span_round["curator"]
