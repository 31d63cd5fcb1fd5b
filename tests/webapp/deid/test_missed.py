"""A missed identifier marked on the review page (webapp.deid_ops.missed, webapp.deid_ops.missed_views):
replaced in the note and the patient's other notes, never another patient's; every offset stored
against those notes follows the text; their maps are deleted and computed again by relevance jobs
for exactly those notes; audited without the value, which no log, message or answer holds."""

import json
import logging
import re

import pytest
from django.urls import reverse

from ml.peaks.words import snap_to_words
from ml.relevance import RelevanceConfig
from tests.projects import default_project, make_member
from tests.webapp.review.fabricate import add_map, scores_for, tokens, word_span
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus, Note, Task, text_hash
from webapp.corpus.search import matching
from webapp.deid.models import DeidPolicy
from webapp.deid.policy import patient_hash
from webapp.deid_ops.missed import MissedError, StaleNote, mark_missed
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import (
    ModelVersion,
    NoteTokens,
    PeakProfile,
    RelevanceJob,
    RelevanceMap,
    StoredArrays,
)
from webapp.pipeline.planning import plan_now
from webapp.projects.models import Project
from webapp.review.models import Adjudication, MapPeaks, PeakDecision, ReviewRound, RoundPair
from webapp.review.peakstore import ensure

VALUE = "Rossi"
HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}

FIRST = "Pt Rossi seen today. HR 130 bpm, tachycardic. ROSSI reports chest pain."
SECOND = "Follow-up for rossi: stable; Rossini music therapy."
OTHER_PATIENT = "Dr Rossi saw patient two. HR 80 bpm."


@pytest.fixture
def project(db):
    return default_project()


@pytest.fixture
def policy(project):
    return DeidPolicy.objects.create(project=project, mode=DeidPolicy.Mode.TAGS, patient_field="patient")


@pytest.fixture
def tasks(db):
    return {
        "heart": Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"]),
        "pain": Task.objects.create(slug="chest-pain", description="chest pain", options=["y", "n"]),
    }


@pytest.fixture
def base(db):
    return ModelVersion.objects.create(name="base-model", family="llama", path="base-model")


@pytest.fixture
def ward(project, policy, tasks, base):
    """Patient P1's notes in two corpora of the project (one with maps of two tasks, the other of
    one), patient P2's note, each with maps."""
    corpus = Corpus.objects.create(project=project, name="ward", language="en")
    later = Corpus.objects.create(project=project, name="ward-later", language="en")
    first = Note.objects.create(corpus=corpus, external_id="n1", text=FIRST, metadata={"patient": "P1"})
    second = Note.objects.create(corpus=later, external_id="n2", text=SECOND, metadata={"patient": "P1"})
    other = Note.objects.create(corpus=corpus, external_id="n3", text=OTHER_PATIENT, metadata={"patient": "P2"})
    add_map(first, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.8})
    add_map(first, tasks["pain"], base, {"chest": 0.9})
    add_map(second, tasks["heart"], base, {"stable": 0.9})
    add_map(other, tasks["heart"], base, {"80": 0.9})
    return {"corpus": corpus, "later": later, "first": first, "second": second, "other": other}


def span_of(text, word, nth=0):
    return word_span(text, word, nth)


def refreshed(note):
    note.refresh_from_db()
    return note


# ---------------------------------------------------------------- snapping


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (5, 5, "Rossi"),  # a caret inside the word
        (3, 3, "Rossi"),  # at its start
        (8, 8, "Rossi"),  # right after it
        (4, 6, "Rossi"),  # part of it
        (2, 9, "Rossi"),  # with the spaces around
        (0, 8, "Pt Rossi"),  # two words
        (19, 20, ""),  # a full stop alone: no word
    ],
)
def test_a_span_snaps_to_whole_words_as_peaks_do(start, end, expected):
    a, b = snap_to_words(FIRST, start, end)
    assert FIRST[a:b] == expected


# ---------------------------------------------------------------- the text


def test_the_value_is_gone_from_the_note_and_the_patients_other_notes_not_from_another_patients(ward, clinician):
    first, second, other = ward["first"], ward["second"], ward["other"]
    a, b = span_of(FIRST, VALUE)
    result = mark_missed(first, a + 1, a + 1, "NAME", clinician)  # a caret in the word
    assert (result.notes, result.occurrences, result.type) == (2, 3, "NAME")
    assert refreshed(first).text == "Pt [NAME] seen today. HR 130 bpm, tachycardic. [NAME] reports chest pain."
    assert refreshed(second).text == "Follow-up for [NAME]: stable; Rossini music therapy."  # whole words only
    assert refreshed(other).text == OTHER_PATIENT  # another patient's note keeps its Rossi
    for note in (first, second):
        assert note.content_hash == text_hash(note.text)


def test_a_de_identified_copy_of_the_patients_note_is_found_by_the_patients_keyed_hash(ward, clinician, project):
    copy_corpus = Corpus.objects.create(project=project, name="ward (de-identified)", language="en", deidentified=True)
    copy = Note.objects.create(
        corpus=copy_corpus, external_id="n1", text="Rossi again.", metadata={"patient": patient_hash("patient", "P1")}
    )
    a, b = span_of(FIRST, VALUE)
    assert mark_missed(ward["first"], a, b, "NAME", clinician).notes == 3
    assert refreshed(copy).text == "[NAME] again."
    # from a de-identified note: the patient's notes that carry the same keyed hash
    sibling = Note.objects.create(
        corpus=copy_corpus,
        external_id="n2",
        text="Bianchi called.",
        metadata={"patient": patient_hash("patient", "P1")},
    )
    stranger = Note.objects.create(
        corpus=copy_corpus,
        external_id="n3",
        text="Bianchi called.",
        metadata={"patient": patient_hash("patient", "P2")},
    )
    copy.text = "Bianchi and [NAME] again."
    copy.save()
    assert mark_missed(copy, 0, 7, "NAME", clinician).notes == 2
    assert refreshed(sibling).text == "[NAME] called."
    assert refreshed(stranger).text == "Bianchi called."


def test_without_a_patient_field_only_the_note_changes(ward, clinician, policy):
    policy.patient_field = ""
    policy.save()
    a, b = span_of(FIRST, VALUE)
    result = mark_missed(ward["first"], a, b, "NAME", clinician)
    assert (result.notes, result.occurrences, result.patient_scope) == (1, 2, False)
    assert refreshed(ward["second"]).text == SECOND


def test_surrogates_give_the_patient_one_stand_in_in_every_note(ward, clinician, policy):
    policy.mode = DeidPolicy.Mode.SURROGATES
    policy.save()
    a, b = span_of(FIRST, VALUE)
    mark_missed(ward["first"], a, b, "NAME", clinician)
    first, second = refreshed(ward["first"]).text, refreshed(ward["second"]).text
    stand_in = re.match(r"Pt (\w+) seen", first).group(1)
    assert stand_in != VALUE and "[NAME]" not in first
    assert re.match(r"Follow-up for (\w+):", second).group(1) == stand_in.lower()  # in the mention's shape
    assert re.search(r"\. (\w+) reports", first).group(1) == stand_in.upper()


def test_the_search_index_follows_the_text(ward, clinician):
    notes = Note.objects.filter(corpus=ward["corpus"])
    assert set(matching(notes, "Rossi", language="en")) == {ward["first"], ward["other"]}
    a, b = span_of(FIRST, VALUE)
    mark_missed(ward["first"], a, b, "NAME", clinician)
    assert set(matching(notes, "Rossi", language="en")) == {ward["other"]}


def test_a_stale_page_or_a_span_with_no_word_changes_nothing(ward, clinician):
    a, b = span_of(FIRST, VALUE)
    with pytest.raises(StaleNote):
        mark_missed(ward["first"], a, b, "NAME", clinician, expected_hash="0" * 64)
    with pytest.raises(MissedError):
        mark_missed(ward["first"], 19, 20, "NAME", clinician)
    with pytest.raises(MissedError):
        mark_missed(ward["first"], a, b, "NOT_A_TYPE", clinician)
    assert refreshed(ward["first"]).text == FIRST
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.MISSED_IDENTIFIER).exists()


# ---------------------------------------------------------------- what points into the text


def test_evidence_after_the_value_moves_and_evidence_around_it_grows(ward, clinician, tasks):
    before, around, after = span_of(FIRST, "Pt"), (0, span_of(FIRST, "seen")[1]), span_of(FIRST, "chest")
    gold = Annotation.objects.create(
        note=ward["first"], task=tasks["heart"], label="y", annotator_name="gold", evidence=[before, around, after]
    )
    a, b = span_of(FIRST, VALUE)
    mark_missed(ward["first"], a, b, "NAME", clinician)
    text = refreshed(ward["first"]).text
    evidence = [tuple(span) for span in refreshed(gold).evidence]
    assert evidence == [before, (0, around[1] + 1), (after[0] + 2, after[1] + 2)]  # "[NAME]" is 1 longer, twice
    assert [text[s:e] for s, e in evidence] == ["Pt", "Pt [NAME] seen", "chest"]


def test_a_note_that_shrinks_keeps_its_evidence_at_its_end(ward, clinician, tasks):
    note = Note.objects.create(
        corpus=ward["corpus"], external_id="n9", text="Mariangela has pain", metadata={"patient": "P3"}
    )
    gold = Annotation.objects.create(
        note=note, task=tasks["pain"], label="y", annotator_name="gold", evidence=[list(span_of(note.text, "pain"))]
    )
    mark_missed(note, 0, 10, "NAME", clinician)  # 10 characters become 6
    assert refreshed(note).text == "[NAME] has pain"
    assert refreshed(gold).evidence == [[11, 15]]


def test_peaks_and_decisions_on_them_follow_the_text(ward, clinician, admin_user, tasks, base):
    note, heart = ward["first"], tasks["heart"]
    tachy, chest = span_of(FIRST, "tachycardic"), span_of(FIRST, "chest")
    decision = PeakDecision.objects.create(
        note=note,
        task=heart,
        model_version=base,
        method="attnlrp",
        template="en",
        start=tachy[0],
        end=tachy[1],
        decision="adjust",
        adjusted_start=tachy[0],
        adjusted_end=chest[1],  # reaches over the second occurrence
        previous={"decision": "adjust", "adjusted_start": chest[0], "adjusted_end": chest[1], "comment": ""},
        reviewer=clinician,
    )
    rejected = PeakDecision.objects.create(
        note=note, task=heart, model_version=base, method="attnlrp", template="en",
        start=chest[0], end=chest[1], decision="reject", reviewer=clinician,
    )  # fmt: skip
    settled = Adjudication.objects.create(
        note=note, task=heart, start=chest[0], end=chest[1], decision="accept", curator=admin_user
    )
    rnd = ReviewRound.objects.create(
        corpus=ward["corpus"], model_version=base, method="attnlrp", template="en", name="r"
    )
    pair = RoundPair.objects.create(round=rnd, position=0, note=note, task=heart, peaks=[list(tachy), list(chest)])
    a, b = span_of(FIRST, VALUE)
    mark_missed(note, a, b, "NAME", clinician)
    text = refreshed(note).text
    decision.refresh_from_db()
    assert text[decision.start : decision.end] == "tachycardic"
    assert text[decision.adjusted_start : decision.adjusted_end] == "tachycardic. [NAME] reports chest"
    assert text[decision.previous["adjusted_start"] : decision.previous["adjusted_end"]] == "chest"
    rejected.refresh_from_db()
    assert text[rejected.start : rejected.end] == "chest"
    settled.refresh_from_db()
    assert text[settled.start : settled.end] == "chest"
    assert [text[s:e] for s, e in refreshed_pair(pair).peaks] == ["tachycardic", "chest"]


def refreshed_pair(pair):
    pair.refresh_from_db()
    return pair


def test_two_decisions_whose_spans_become_one_peak_keep_the_later(ward, clinician, tasks, base):
    note = Note.objects.create(corpus=ward["corpus"], external_id="n8", text="Seen Rossi today", metadata={})
    common = {"note": note, "task": tasks["heart"], "model_version": base, "method": "attnlrp", "template": "en"}
    older = PeakDecision.objects.create(**common, start=0, end=7, decision="accept", reviewer=clinician)
    newer = PeakDecision.objects.create(**common, start=0, end=10, decision="reject", reviewer=clinician)
    mark_missed(note, 5, 10, "NAME", clinician)  # both now end with the tag: "Seen [NAME]"
    assert list(PeakDecision.objects.filter(note=note).values_list("pk", "start", "end")) == [(newer.pk, 0, 11)]
    assert not PeakDecision.objects.filter(pk=older.pk).exists()


# ---------------------------------------------------------------- relevance maps


def test_the_changed_notes_maps_are_deleted_and_a_job_computes_exactly_them_again(ward, clinician, tasks, base):
    first, second, other = ward["first"], ward["second"], ward["other"]
    profile = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    ensure(RelevanceMap.objects.all(), profile.params)
    assert MapPeaks.objects.count() == 4
    a, b = span_of(FIRST, VALUE)
    result = mark_missed(first, a, b, "NAME", clinician)
    assert result.maps == 3 and result.not_recomputed == 0
    assert list(RelevanceMap.objects.values_list("note_id", flat=True)) == [other.pk]
    assert list(MapPeaks.objects.values_list("map__note_id", flat=True)) == [other.pk]
    assert not NoteTokens.objects.filter(note__in=[first, second]).exists()
    launched = RelevanceJob.objects.filter(pk__in=result.jobs).order_by("pk")
    assert len(launched) == 2  # one per corpus and set of tasks, each through the usual lifecycle
    pairs = set()
    for job in launched:
        assert job.status == JobStatus.PLANNING and job.model_version == base and job.created_by == clinician
        assert job.config_key == RelevanceMap.objects.get(note=other).config.config_key
        plan_now(job)
        pairs |= {tuple(p) for chunk in job.chunks.all() for p in chunk.pairs}
    expected = {(first.pk, tasks["heart"].pk), (first.pk, tasks["pain"].pk), (second.pk, tasks["heart"].pk)}
    assert pairs == expected


def test_maps_of_another_configuration_are_computed_again_with_it(ward, clinician, tasks, base):
    config = RelevanceConfig(method="attnlrp", template="en", explain="span", normalise="clip")
    made = RelevanceJob(corpus=ward["corpus"], model_version=base, status=JobStatus.DONE)
    made.set_config(config)
    made.save()
    RelevanceMap.objects.store(
        [((ward["first"].pk, tasks["heart"].pk), StoredArrays(tokens(FIRST), scores_for(FIRST, {"130": 0.9})))],
        model_version_id=base.pk,
        method="attnlrp",
        template="en",
        config_key=config.key,
        job_id=made.pk,
    )
    a, b = span_of(FIRST, VALUE)
    result = mark_missed(ward["first"], a, b, "NAME", clinician)
    again = RelevanceJob.objects.get(pk__in=result.jobs, config_key=config.key)
    assert again.relevance_config == config
    assert again.note_filter == {"ids": [ward["first"].pk]}
    assert list(again.tasks.all()) == [tasks["heart"]]
    assert RelevanceJob.objects.filter(pk__in=result.jobs).count() == 3  # and the default configuration's two


# ---------------------------------------------------------------- audit and logs


def test_it_is_audited_with_counts_and_no_value_and_no_log_holds_the_value(ward, clinician, caplog):
    caplog.set_level(logging.DEBUG)
    a, b = span_of(FIRST, VALUE)
    result = mark_missed(ward["first"], a, b, "NAME", clinician)
    event = AuditEvent.objects.get(action=AuditEvent.Action.MISSED_IDENTIFIER)
    assert (event.actor, event.object_type, event.object_id) == (clinician, "corpus.Note", str(ward["first"].pk))
    assert event.project_id == ward["corpus"].project_id
    details = event.details
    assert (details["note"], details["type"], details["notes"], details["occurrences"]) == (
        ward["first"].pk, "NAME", 2, 3,
    )  # fmt: skip
    assert details["jobs"] == list(result.jobs)
    every_row = json.dumps(
        list(AuditEvent.objects.values("actor_name", "object_type", "object_id", "details")), default=str
    ).lower()
    assert VALUE.lower() not in every_row
    assert VALUE.lower() not in caplog.text.lower()
    assert VALUE.lower() not in repr(result).lower()


# ---------------------------------------------------------------- the view


def post(client, note, start, end, kind="NAME", **extra):
    data = {"note": note.pk, "start": start, "end": end, "type": kind, **extra}
    return client.post(reverse("deid:missed"), data, **HX)


def test_a_reviewer_marks_it_and_the_panel_shows_the_new_text_and_the_maps_being_recomputed(
    client, ward, clinician, tasks, base, caplog
):
    caplog.set_level(logging.DEBUG)
    client.force_login(clinician)
    first = ward["first"]
    a, b = span_of(FIRST, VALUE)
    query = {"task": tasks["heart"].pk, "model": base.pk, "method": "attnlrp", "template": "en", "window": 0}
    response = post(client, first, a, b, hash=first.content_hash, **query)
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#note-panel"
    page = response.content.decode()
    assert "Pt [NAME] seen today" in page and 'id="maps-recomputing"' in page
    assert "replaced 3 times in 2 notes; relevance maps are being recomputed" in page
    assert VALUE.lower() not in page.lower()
    assert VALUE.lower() not in caplog.text.lower()
    # the panel's poll: nothing to swap while the job runs, the panel once it ended
    note_url = reverse("review:note", args=[first.corpus_id, first.pk])
    waiting = client.get(note_url, {**query, "waiting": "maps"}, **HX)
    assert waiting.status_code == 204
    RelevanceJob.objects.update(status=JobStatus.DONE)
    done = client.get(note_url, {**query, "waiting": "maps"}, **HX)
    assert done.status_code == 200 and 'id="maps-recomputing"' not in done.content.decode()


def test_a_plain_form_is_redirected_back_to_the_note(client, ward, clinician, tasks, base):
    client.force_login(clinician)
    a, b = span_of(FIRST, VALUE)
    response = client.post(reverse("deid:missed"), {"note": ward["first"].pk, "start": a, "end": b, "type": "NAME"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("review:note", args=[ward["corpus"].pk, ward["first"].pk]))


def test_a_stale_page_is_refused_with_409_and_a_bad_form_with_400(client, ward, clinician):
    client.force_login(clinician)
    a, b = span_of(FIRST, VALUE)
    assert post(client, ward["first"], a, b, hash="f" * 64).status_code == 409
    assert post(client, ward["first"], a, b, kind="NOPE").status_code == 400
    assert post(client, ward["first"], 19, 20).status_code == 400
    assert refreshed(ward["first"]).text == FIRST


def test_a_user_of_no_project_gets_404(client, ward, norole_user):
    client.force_login(norole_user)
    a, b = span_of(FIRST, VALUE)
    assert post(client, ward["first"], a, b).status_code == 404
    assert refreshed(ward["first"]).text == FIRST


def test_a_member_who_may_not_review_gets_403(client, ward, researcher):
    client.force_login(researcher)
    a, b = span_of(FIRST, VALUE)
    assert post(client, ward["first"], a, b).status_code == 403
    assert refreshed(ward["first"]).text == FIRST


def test_a_form_naming_another_projects_note_gets_404(client, ward, clinician, django_user_model):
    elsewhere = Project.objects.create(slug="elsewhere", name="Elsewhere")
    corpus = Corpus.objects.create(project=elsewhere, name="theirs", language="en")
    theirs = Note.objects.create(corpus=corpus, external_id="x1", text="Rossi was here.")
    owner = django_user_model.objects.create_user(username="owner", password="x")
    make_member(owner, "clinician", elsewhere)
    client.force_login(clinician)
    assert post(client, theirs, 0, 5).status_code == 404
    garbled = {"note": "not-a-number", "start": 0, "end": 5, "type": "NAME"}
    assert client.post(reverse("deid:missed"), garbled, **HX).status_code == 404
    assert refreshed(theirs).text == "Rossi was here."


def test_a_policy_that_keeps_the_mapping_keeps_the_new_pair_encrypted(ward, clinician, policy, settings):
    from cryptography.fernet import Fernet

    from webapp.deid import mapping
    from webapp.deid.models import SurrogateMapping

    policy.mode, policy.keep_mapping = DeidPolicy.Mode.SURROGATES, True
    policy.save()
    a, b = span_of(FIRST, VALUE)
    settings.DEID_MAPPING_KEY = ""
    with pytest.raises(MissedError):  # no key: nothing replaced rather than a pair lost
        mark_missed(ward["first"], a, b, "NAME", clinician)
    assert refreshed(ward["first"]).text == FIRST
    settings.DEID_MAPPING_KEY = Fernet.generate_key().decode()
    mark_missed(ward["first"], a, b, "NAME", clinician)
    stand_in = re.match(r"Pt (\w+) seen", refreshed(ward["first"]).text).group(1)
    key = patient_hash("patient", "P1")
    assert (VALUE, stand_in) in mapping.pairs_of(ward["corpus"].project_id, key)
    assert VALUE.encode() not in bytes(SurrogateMapping.objects.get(patient_hash=key).ciphertext)
