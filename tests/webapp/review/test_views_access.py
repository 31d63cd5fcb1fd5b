"""Every review page x every role: clinicians review, researchers read, anonymous visitors go to
the login page. A user of no project gets 403 on pages without an object and 404 on pages of a
corpus, note or validation set (another project's object is not disclosed: webapp.projects.scoping)."""

import pytest
from django.urls import reverse

from tests.projects import default_project
from webapp.review.models import PeakDecision, ValidationSet

from .fabricate import TEXT, query, word_span

ROLES = ["anonymous", "norole", "clinician", "researcher", "admin"]
READERS = {"clinician", "researcher", "admin"}
REVIEWERS = {"clinician", "admin"}
TUNERS = {"clinician", "researcher", "admin"}  # REVIEW or LAUNCH
PAGES_WITHOUT_OBJECT = {"index", "report"}


@pytest.fixture
def vset(corpus, base, note, tasks, maps):
    return ValidationSet.objects.create(
        corpus=corpus,
        model_version=base,
        method="attnlrp",
        template="en",
        name="v",
        items=[[note.pk, tasks["heart"].pk]],
        grid=[{"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}],
    )


@pytest.fixture
def user_for(clinician, researcher, admin_user, norole_user):
    return {"clinician": clinician, "researcher": researcher, "admin": admin_user, "norole": norole_user}


def gets(note, vset, tasks, base, sharp):
    q = "?" + "&".join(f"{k}={v}" for k, v in query(tasks["heart"], base, sharp).items())
    c, n = note.corpus_id, note.pk
    return {
        "index": (reverse("review:index"), READERS),
        "notes": (reverse("review:notes", args=[c]) + q, READERS),
        "note": (reverse("review:note", args=[c, n]) + q, READERS),
        "compare": (reverse("review:compare", args=[c, n]) + q, READERS),
        "compare-summary": (reverse("review:compare_summary", args=[c]) + q, READERS),
        "preview": (reverse("review:preview", args=[c]) + q, READERS),
        "queue": (reverse("review:queue", args=[c]) + q, REVIEWERS),
        "validation-list": (reverse("review:validation_list", args=[c]), READERS),
        "validation-results": (reverse("review:validation_results", args=[vset.pk]), READERS),
        "validation-round": (reverse("review:validation_round", args=[vset.pk]), READERS),
        "report": (reverse("review:report"), READERS),
    }


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    "view",
    [
        "index",
        "notes",
        "note",
        "compare",
        "compare-summary",
        "preview",
        "queue",
        "validation-list",
        "validation-results",
        "validation-round",
        "report",
    ],
)
def test_each_page_answers_each_role(client, user_for, role, view, note, vset, tasks, base, sharp):
    url, allowed = gets(note, vset, tasks, base, sharp)[view]
    if role != "anonymous":
        client.force_login(user_for[role])
    response = client.get(url)
    if role == "anonymous":
        assert response.status_code == 302 and "/login/" in response["Location"]
    elif role in allowed:
        assert response.status_code in (200, 302)
    elif role == "norole" and view not in PAGES_WITHOUT_OBJECT:
        assert response.status_code == 404
    else:
        assert response.status_code == 403


def decision_post(note, tasks, base, sharp):
    a, b = word_span(TEXT, "130")
    return {
        **query(tasks["heart"], base, sharp),
        "k": 1,
        "sigma": 1.0,
        "lower": 0.2,
        "upper": 0.4,
        "start": a,
        "end": b,
        "decision": "accept",
        "version": 0,
    }


@pytest.mark.parametrize("role", ROLES)
def test_only_reviewers_can_decide_on_a_peak(client, user_for, role, note, tasks, base, sharp, maps):
    if role != "anonymous":
        client.force_login(user_for[role])
    response = client.post(
        reverse("review:decide", args=[note.corpus_id, note.pk]), decision_post(note, tasks, base, sharp)
    )
    expected = {"anonymous": 302, "norole": 404, "researcher": 403, "clinician": 302, "admin": 302}[role]
    assert response.status_code == expected
    assert PeakDecision.objects.exists() == (role in REVIEWERS)


@pytest.mark.parametrize("role, status", [("norole", 404), ("researcher", 403)])
def test_undo_and_judging_need_the_review_role(client, user_for, role, status, note, vset, tasks, base, sharp):
    """A researcher of the corpus's project is refused (403); a user of no project does not find it (404)."""
    client.force_login(user_for[role])
    assert (
        client.post(
            reverse("review:undo", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp)
        ).status_code
        == status
    )
    assert (
        client.post(
            reverse("review:validation_judge", args=[vset.pk]), {"position": 0, "setting": 0, "answer": "yes"}
        ).status_code
        == status
    )


@pytest.mark.parametrize("role", ROLES)
def test_saving_a_profile_needs_review_or_launch(client, user_for, role, sharp, corpus):
    if role != "anonymous":
        client.force_login(user_for[role])
    response = client.post(
        reverse("review:save_profile"),
        {"corpus": corpus.pk, "name": "tuned", "k": 3, "sigma": 1, "lower": 0.2, "upper": 0.5},
    )
    expected = 302 if role in TUNERS or role == "anonymous" else 403
    assert response.status_code == expected
    from webapp.pipeline.models import PeakProfile

    assert PeakProfile.objects.filter(name="tuned").exists() == (role in TUNERS)


@pytest.mark.parametrize("role", ["norole"])
def test_drawing_a_validation_set_and_adopting_need_review_or_launch(client, user_for, role, note, vset, base):
    """Every project role has REVIEW or LAUNCH, so only a user of no project is refused: they do not
    find the corpus or the validation set (404)."""
    client.force_login(user_for[role])
    assert (
        client.post(
            reverse("review:validation_list", args=[note.corpus_id]),
            {
                "name": "x",
                "model": base.pk,
                "method": "attnlrp",
                "template": "en",
                "size": 1,
                "seed": 0,
                "grid": "1 1 0.2 0.4",
            },
        ).status_code
        == 404
    )
    adopt = reverse("review:validation_adopt", args=[vset.pk])
    assert client.post(adopt, {"name": "x", "setting": 0}).status_code == 404
    assert client.post(reverse("review:redraw_sample", args=[note.corpus_id])).status_code == 404


def test_a_note_of_another_corpus_is_not_found(client, clinician, note, corpus):
    from webapp.corpus.models import Corpus

    other = Corpus.objects.create(project=default_project(), name="other", language="en")
    client.force_login(clinician)
    assert client.get(reverse("review:note", args=[other.pk, note.pk])).status_code == 404
