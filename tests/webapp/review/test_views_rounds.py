"""Round pages: creating a round, a reviewer's queue inside it, adjudication by a curator (final
for dataset builds), the export of the team's work, and accuracy against the adjudicated result."""

import csv
import io
import json
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.conftest import _make_user
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.review import decisions, reports, rounds, timing
from webapp.review.decisions import PeakContext
from webapp.review.models import Adjudication, PeakDecision, ReviewRound, RoundClaim

from .fabricate import TEXT, add_map, word_span


@pytest.fixture
def curator(db, django_user_model):
    return _make_user(django_user_model, "cora", "curator")


@pytest.fixture
def second(db, django_user_model):
    return _make_user(django_user_model, "carl", "clinician")


@pytest.fixture
def ward_round(corpus, tasks, base, sharp, clinician, second):
    notes = [Note.objects.create(corpus=corpus, external_id=f"w{i}", text=TEXT) for i in range(2)]
    for note in notes:
        add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.9})
    return rounds.create_round(
        corpus,
        name="march",
        tasks=[tasks["heart"]],
        model=base,
        method="attnlrp",
        template="en",
        profile=sharp,
        k=2,
        reviewers=[clinician, second],
        guideline="Only the **current** rate.",
    )


def decide_pair(rnd, pair, reviewer, outcomes):
    ctx = PeakContext(pair.note, pair.task, rnd.model_version, rnd.method, rnd.template, rnd.config_key)
    for (a, b), outcome in zip(pair.peaks, outcomes):
        decisions.decide(ctx, reviewer, start=a, end=b, decision=outcome, expected_version=0)


def test_a_researcher_creates_a_round_and_a_clinician_may_not(
    client_for, corpus, tasks, base, sharp, researcher, clinician, second
):
    add_map(Note.objects.create(corpus=corpus, external_id="c1", text=TEXT), tasks["heart"], base, {"130": 0.9})
    form = {
        "name": "april",
        "tasks": [tasks["heart"].pk],
        "reviewers": [clinician.pk, second.pk],
        "k": 2,
        "guideline": "",
        "model": base.pk,
        "method": "attnlrp",
        "template": "en",
        "profile": sharp.pk,
    }
    url = f"/review/{corpus.pk}/rounds/"
    assert client_for(clinician).post(url, form).status_code == 403
    assert not ReviewRound.objects.exists()
    response = client_for(researcher).post(url, form)
    rnd = ReviewRound.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/review/rounds/{rnd.pk}/"
    assert (rnd.k, rnd.profile, rnd.pairs.count()) == (2, sharp, 1)
    page = client_for(researcher).get(response["Location"]).content.decode()
    assert "0</strong> of 2 judgements" in page


def test_the_round_queue_opens_the_pair_under_the_round_and_a_decision_finishes_the_claim(
    client_for, ward_round, clinician, tasks, sharp
):
    client = client_for(clinician)
    response = client.get(f"/review/rounds/{ward_round.pk}/queue/")
    pair = ward_round.pairs.get(position=0)
    assert response.status_code == 302
    assert f"/notes/{pair.note_id}/" in response["Location"] and f"round={ward_round.pk}" in response["Location"]
    assert f"profile={sharp.pk}" in response["Location"]
    page = client.get(response["Location"]).content.decode()
    assert f'id="queue-link" href="/review/rounds/{ward_round.pk}/queue/"' in page
    assert "<strong>current</strong> rate" in page  # the round's guideline
    query = dict(parse_qsl(urlsplit(response["Location"]).query))
    for a, b in pair.peaks:
        params = {"k": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}  # the sharp profile, as the page's sliders
        form = {**query, **params, "start": a, "end": b, "decision": "accept", "version": 0, "window": 0}
        assert client.post(f"/review/{pair.note.corpus_id}/notes/{pair.note_id}/decide/", form).status_code == 302
    claim = RoundClaim.objects.get(pair=pair, reviewer=clinician)
    assert claim.done is not None
    assert (
        f"/notes/{ward_round.pairs.get(position=1).note_id}/"
        in client.get(f"/review/rounds/{ward_round.pk}/queue/")["Location"]
    )


def test_someone_outside_the_round_is_told_so(client_for, ward_round, admin_user):
    response = client_for(admin_user).get(f"/review/rounds/{ward_round.pk}/queue/", follow=True)
    assert "not a reviewer of this round" in response.content.decode()


def test_a_curator_settles_a_disputed_peak_and_builds_use_it(client_for, ward_round, clinician, second, curator, tasks):
    pair = ward_round.pairs.get(position=0)
    decide_pair(ward_round, pair, clinician, ["accept", "accept"])
    decide_pair(ward_round, pair, second, ["reject", "accept"])  # tie on the first peak: rejected
    first = tuple(pair.peaks[0])
    assert decisions.rejected_spans([pair.note_id], [pair.task_id]) == {(pair.note_id, pair.task_id): [first]}
    url = f"/review/rounds/{ward_round.pk}/adjudicate/"
    assert client_for(clinician).get(url).status_code == 403
    page = client_for(curator).get(url).content.decode()
    assert "Peak <strong>1</strong> of 1" in page and "carl" in page and "clara" in page
    assert "majority rule gives <strong>rejected" in page
    form = {"note": pair.note_id, "task": pair.task_id, "start": first[0], "end": first[1], "decision": "accept"}
    assert client_for(curator).post(url, form).status_code == 302
    row = Adjudication.objects.get()
    assert (row.decision, row.curator, row.round) == ("accept", curator, ward_round)
    assert decisions.rejected_spans([pair.note_id], [pair.task_id]) == {}  # the curator's decision is final
    event = AuditEvent.objects.filter(details__kind="adjudication").get()
    assert event.details["decision"] == "accept" and event.details["span"] == list(first)
    form["decision"] = "reject"
    client_for(curator).post(url, form)
    row.refresh_from_db()
    assert (row.decision, row.version, row.previous["decision"]) == ("reject", 2, "accept")
    assert decisions.rejected_spans([pair.note_id], [pair.task_id]) == {(pair.note_id, pair.task_id): [first]}


def test_a_span_that_is_not_a_peak_of_the_round_is_refused(client_for, ward_round, curator, tasks):
    pair = ward_round.pairs.get(position=0)
    form = {"note": pair.note_id, "task": pair.task_id, "start": 0, "end": 2, "decision": "reject"}
    response = client_for(curator).post(f"/review/rounds/{ward_round.pk}/adjudicate/", form, follow=True)
    assert "not a peak of this round" in response.content.decode()
    assert not Adjudication.objects.exists()


def test_the_export_holds_every_judgement_and_each_peaks_result(
    client_for, ward_round, clinician, second, curator, researcher
):
    pair = ward_round.pairs.get(position=0)
    decide_pair(ward_round, pair, clinician, ["accept", "reject"])
    decide_pair(ward_round, pair, second, ["reject", "reject"])
    a, b = pair.peaks[0]
    Adjudication.objects.create(note=pair.note, task=pair.task, start=a, end=b, decision="accept", curator=curator)
    assert client_for(clinician).get(f"/review/rounds/{ward_round.pk}/export.jsonl").status_code == 403
    body = b"".join(client_for(researcher).get(f"/review/rounds/{ward_round.pk}/export.jsonl").streaming_content)
    records = [json.loads(line) for line in body.decode().splitlines()]
    assert len(records) == 4  # 2 pairs x 2 peaks
    first, second_peak, untouched = records[0], records[1], records[2]
    assert [j["reviewer"] for j in first["judgements"]] == ["clara", "carl"]
    assert first["result"] == {**first["result"], "kept": True, "by": "curator", "curator": "cora"}
    assert (second_peak["result"]["kept"], second_peak["result"]["by"]) == (False, "majority")
    assert (untouched["result"]["kept"], untouched["result"]["by"], untouched["judgements"]) == (None, "none", [])
    assert "tachycardic" not in body.decode()  # ids and offsets, no note text
    text = b"".join(client_for(researcher).get(f"/review/rounds/{ward_round.pk}/export.csv").streaming_content)
    rows = list(csv.DictReader(io.StringIO(text.decode())))
    assert len(rows) == 2 + 2 + 1 + 1  # a row per judgement, one for each undecided peak
    assert rows[0]["result_by"] == "curator" and rows[0]["reviewer"] == "clara"
    assert AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT, details__kind="review_round").count() == 2


def test_reviewer_accuracy_is_measured_against_the_curator(ward_round, clinician, second, curator, corpus, site_admin):
    pair = ward_round.pairs.get(position=0)
    decide_pair(ward_round, pair, clinician, ["accept", "reject"])
    decide_pair(ward_round, pair, second, ["reject", "accept"])
    for (a, b), decision in zip(pair.peaks, ["accept", "reject"]):
        Adjudication.objects.create(note=pair.note, task=pair.task, start=a, end=b, decision=decision, curator=curator)
    by_name = {a.reviewer: (a.peaks, a.agreed) for a in reports.reviewer_accuracy(site_admin, corpus)}
    assert by_name == {"clara": (2, 2), "carl": (2, 0)}


def test_the_round_page_says_the_majority_rule_holds_until_a_curator_decides(client_for, ward_round, clinician,
                                                                             second, tasks):  # fmt: skip
    pair = ward_round.pairs.get(position=0)
    decide_pair(ward_round, pair, clinician, ["accept", "accept"])
    decide_pair(ward_round, pair, second, ["reject", "accept"])
    page = client_for(clinician).get(f"/review/rounds/{ward_round.pk}/").content.decode()
    assert "1 disputed peak of 4: 0 settled by a curator, 1 follow the majority rule (a tie rejects)" in page
    assert word_span(TEXT, "130") == tuple(pair.peaks[0])


def test_the_round_page_estimates_the_review_time_left_from_its_own_timed_decisions(client_for, ward_round, clinician):
    page = client_for(clinician).get(f"/review/rounds/{ward_round.pk}/").content.decode()
    assert "4 judgements left; no timed decision yet" in page
    pair = ward_round.pairs.get(position=0)
    decide_pair(ward_round, pair, clinician, ["accept", "accept"])
    PeakDecision.objects.filter(reviewer=clinician).update(active_ms=6000)
    time = timing.round_time(ward_round)
    # 2 pairs x k=2 = 4 judgements, 2 peaks a pair, 6 s a decision (2 timed, this round's own).
    assert (time.peaks_per_pair, time.median_s, time.timed_decisions, time.source) == (2.0, 6.0, 2, "this round")
    assert time.judgements_left == 4  # decided outside the round's queue: no claim finished
    assert time.hours == pytest.approx(4 * 2 * 6 / 3600)
    page = client_for(clinician).get(f"/review/rounds/{ward_round.pk}/").content.decode()
    assert "of review left" in page and "for each of 2 reviewers" in page


def test_the_confidence_rule_sends_only_peaks_below_the_agreement_asked_to_the_curator(
    client_for, corpus, tasks, base, sharp, clinician, second, curator, django_user_model
):
    third = _make_user(django_user_model, "cleo", "clinician")
    note = Note.objects.create(corpus=corpus, external_id="r1", text=TEXT)
    add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.9})
    reviewers = [clinician, second, third]
    common = dict(tasks=[tasks["heart"]], model=base, method="attnlrp", template="en", profile=sharp, k=3)
    everyone = rounds.create_round(corpus, name="all agree", reviewers=reviewers, **common)
    majority = rounds.create_round(corpus, name="two of three", reviewers=reviewers, agreement_needed=66, **common)
    pair = everyone.pairs.get()
    assert len(pair.peaks) == 2
    decide_pair(everyone, pair, clinician, ["accept", "accept"])  # same map: both rounds see these decisions
    decide_pair(everyone, pair, second, ["accept", "reject"])
    from webapp.review import adjudication

    # After two judgements: the second peak is split 1 to 1, under any rule.
    assert [p.disputed for p in adjudication.round_peaks(majority)] == [False, True]
    decide_pair(everyone, pair, third, ["reject", "accept"])  # each peak now 2 to 1
    assert [p.disputed for p in adjudication.round_peaks(everyone)] == [True, True]
    assert [p.disputed for p in adjudication.round_peaks(majority)] == [False, False]
    page = client_for(curator).get(f"/review/rounds/{majority.pk}/").content.decode()
    assert "fewer than 66% of its reviewers agree" in page and "0 disputed peaks of 2" in page
    page = client_for(curator).get(f"/review/rounds/{everyone.pk}/adjudicate/").content.decode()
    assert "its reviewers disagree on keeping it" in page
    with pytest.raises(rounds.RoundError, match="between 50%"):
        rounds.create_round(corpus, name="too lax", reviewers=reviewers, agreement_needed=40, **common)
