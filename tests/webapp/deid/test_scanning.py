"""Residual scans (webapp.deid_ops.scanning): a corpus's notes scanned in batches with the project's
detector, counts per identifier type and the notes with findings kept on the DeidJob with its
progress (one transaction a batch), cancel at a batch boundary, a killed attempt resumed without
counting a note twice, one DEID_SCAN audit row; launched from the corpus page and the API by those
who may launch work, shown to every member; never a value in a row, a log line, a page or an answer.

`run` is called here as the de-identification task calls it (workers/deid.py: claim, then run),
in this process, with a claimed unit (webapp.deid_ops.jobs.claim). The worker's own path is in
tests/workers/test_deid_scan.py."""

import json
import logging
import re
from datetime import timedelta

import pytest
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from ml.deid.types import Finding
from tests.projects import make_member
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note
from webapp.deid.models import DeidJob
from webapp.deid_ops import jobs, scanning
from webapp.lifecycle.status import JobStatus
from webapp.projects.models import Project

from .conftest import DATE, FIRST, IDENTIFIERS, METADATA, MRN, PHONE, SECOND

CLEAN = "FC 80, pressione nella norma, nessuna tachicardia."


class FakeDetector:
    """Finds the conftest's identifiers by their exact text (and the known values it is given), so
    the counts are known by hand: FIRST holds NAME, RECORD_NUMBER, DATE, PHONE; SECOND NAME, PHONE."""

    PATTERNS = {"DATE": DATE, "PHONE": PHONE, "RECORD_NUMBER": MRN}
    on_text = None  # a hook tests use to act in the middle of a scan

    def find(self, text, known=None):
        if FakeDetector.on_text:
            FakeDetector.on_text(text)
        found = [Finding(kind, *m.span()) for kind, value in self.PATTERNS.items() for m in re.finditer(value, text)]
        name = (known or {}).get("patient_name")
        if name:
            found += [Finding("NAME", *m.span()) for m in re.finditer(re.escape(name), text)]
        return sorted(found, key=lambda f: f.start)


@pytest.fixture
def fake(monkeypatch):
    FakeDetector.on_text = None
    monkeypatch.setattr(scanning, "detector_for", lambda project, language, policy=None: FakeDetector())
    yield FakeDetector
    FakeDetector.on_text = None


@pytest.fixture
def ward(project, policy):
    corpus = Corpus.objects.create(project=project, name="ward", language="it")
    for external_id, text in (("n1", FIRST), ("n2", SECOND), ("n3", CLEAN)):
        Note.objects.create(corpus=corpus, external_id=external_id, text=text, metadata=METADATA)
    return corpus


EXPECTED = {"DATE": 1, "NAME": 2, "PHONE": 2, "RECORD_NUMBER": 1}


def launched(corpus, user) -> DeidJob:
    return scanning.launch(corpus, actor=user)


def claimed(job) -> DeidJob:
    return jobs.claim(job.pk, worker="test")


def no_identifier_in(*texts):
    for text in texts:
        for value in IDENTIFIERS:
            assert value not in text, f"{value!r} leaked"


def test_a_scan_counts_identifiers_per_type_and_the_notes_with_findings(ward, researcher, fake, caplog):
    caplog.set_level(logging.DEBUG)
    job = launched(ward, researcher)
    assert job.action == DeidJob.Action.SCAN and job.notes_total == 3 and job.status == JobStatus.QUEUED
    assert scanning.run(claimed(job), batch=2) == "done"
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.counts == EXPECTED
    assert (job.notes_done, job.notes_total, job.notes_with_findings) == (3, 3, 2)
    event = AuditEvent.objects.get(action=AuditEvent.Action.DEID_SCAN)
    assert event.actor == researcher and event.object_id == str(ward.pk)
    assert event.details == {"job": job.pk, "notes": 3, "notes_with_findings": 2, "counts": EXPECTED}
    rows = json.dumps(list(AuditEvent.objects.values("details", "object_type", "object_id", "actor_name")))
    no_identifier_in(rows, json.dumps(job.counts), job.error, caplog.text)


def test_each_batch_commits_its_counts_with_its_progress(ward, researcher, fake, monkeypatch):
    seen = []
    count = scanning._count

    def spy(job, heart, found, total, last_note):
        count(job, heart, found, total, last_note)
        row = DeidJob.objects.values("notes_done", "counts", "last_note", "heartbeat").get(pk=job.pk)
        seen.append((row["notes_done"], sum(row["counts"].values()), row["last_note"]))

    monkeypatch.setattr(scanning, "_count", spy)
    scanning.run(claimed(launched(ward, researcher)), batch=1)
    ids = list(ward.notes.order_by("pk").values_list("pk", flat=True))
    assert seen == [(1, 4, ids[0]), (2, 6, ids[1]), (3, 6, ids[2])]


def test_a_killed_scan_goes_on_after_the_last_batch_without_counting_a_note_twice(ward, researcher, fake):
    job = launched(ward, researcher)

    def die_on_the_second_note(text):
        if text == SECOND:
            raise SystemExit("worker killed")

    fake.on_text = die_on_the_second_note
    with pytest.raises(SystemExit):
        scanning.run(claimed(job), batch=1)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.notes_done == 1
    assert job.counts == {"DATE": 1, "NAME": 1, "PHONE": 1, "RECORD_NUMBER": 1}  # the first note's, committed
    # its heartbeat goes stale; the next attempt (the sweeper's, or a redelivery) claims it
    DeidJob.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(days=1))
    fake.on_text = None
    again = claimed(job)
    assert again is not None and again.attempts == 2
    assert scanning.run(again, batch=1) == "done"
    again.refresh_from_db()
    assert again.counts == EXPECTED and (again.notes_done, again.notes_with_findings) == (3, 2)


def test_a_cancel_stops_the_scan_at_a_batch_boundary(ward, researcher, fake):
    job = launched(ward, researcher)

    def cancel_while_reading_the_second(text):
        if text == SECOND:
            jobs.cancel(job, researcher)

    fake.on_text = cancel_while_reading_the_second
    assert scanning.run(claimed(job), batch=1) == "cancelled"
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.notes_done == 2  # the batch in hand is counted
    assert job.counts == EXPECTED  # the two notes with identifiers; the third was never read
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.DEID_SCAN).exists()


def test_a_cancelled_scan_resumes_where_it_stopped(ward, researcher, fake):
    job = launched(ward, researcher)
    fake.on_text = lambda text: jobs.cancel(job, researcher) if text == FIRST else None
    scanning.run(claimed(job), batch=1)
    fake.on_text = None
    assert jobs.resume(job, researcher)
    assert scanning.run(claimed(job), batch=1) == "done"
    job.refresh_from_db()
    assert job.counts == EXPECTED and job.notes_done == 3


def test_an_attempt_that_lost_the_scan_writes_nothing_more(ward, researcher, fake):
    job = launched(ward, researcher)
    fake.on_text = lambda text: DeidJob.objects.filter(pk=job.pk).update(attempts=F("attempts") + 1)
    assert scanning.run(claimed(job), batch=2) is None
    job.refresh_from_db()
    assert job.notes_done == 0 and job.counts == {}


def test_a_scan_of_a_deleted_corpus_fails_in_words(ward, researcher, fake):
    job = claimed(launched(ward, researcher))
    job.source = None
    with pytest.raises(scanning.ScanError, match="The corpus of this scan was deleted"):
        scanning.run(job)


def test_a_second_scan_waits_for_the_first(ward, researcher, fake):
    launched(ward, researcher)
    with pytest.raises(scanning.ScanError, match="already queued or running"):
        launched(ward, researcher)


def test_a_corpus_in_a_language_the_policy_does_not_read_is_refused_at_launch(project, policy, researcher):
    mixed = Corpus.objects.create(project=project, name="mixed", language="mul")
    with pytest.raises(scanning.ScanError, match="this corpus's language is 'mul'"):
        launched(mixed, researcher)
    assert not DeidJob.objects.exists()


def test_the_real_detector_counts_without_a_value(ward, researcher, caplog):
    caplog.set_level(logging.DEBUG)
    job = launched(ward, researcher)
    assert scanning.run(claimed(job)) == "done"
    job.refresh_from_db()
    assert job.notes_with_findings == 2 and {"NAME", "PHONE", "DATE", "RECORD_NUMBER"} <= set(job.counts)
    no_identifier_in(json.dumps(list(AuditEvent.objects.values("details"))), caplog.text)


# ---------------------------------------------------------------- the corpus page


def test_the_corpus_page_launches_a_scan_and_shows_its_counts(client, ward, researcher, fake):
    client.force_login(researcher)
    url = reverse("corpus:detail", args=[ward.pk])
    html = client.get(url).content.decode()
    assert "Not scanned yet." in html and "Scan for identifiers left" in html
    response = client.post(reverse("deid:corpus_scan", args=[ward.pk]), follow=True)
    assert "queued for a residual scan" in response.content.decode()
    job = DeidJob.objects.get(action="scan")
    poll = client.get(reverse("deid:corpus_scan", args=[ward.pk]), HTTP_HX_REQUEST="true")
    assert poll.status_code == 200 and 'hx-trigger="every 2s"' in poll.content.decode()
    scanning.run(claimed(job))
    poll = client.get(reverse("deid:corpus_scan", args=[ward.pk]), HTTP_HX_REQUEST="true")
    assert poll.status_code == 286  # the poll ends with the scan
    html = client.get(url).content.decode()
    for kind, n in EXPECTED.items():
        assert f'<code class="identifier-type">{kind}</code></small></td><td class="num">{n}</td>' in html
    assert "3 notes scanned" in html and "2 with identifiers" in html and "Scan again" in html
    no_identifier_in(html.split('id="deid-gate-card"')[1].split("</section>")[0])


def test_a_clinician_sees_the_counts_but_cannot_launch(client, ward, clinician, researcher, fake):
    scanning.run(claimed(launched(ward, researcher)))
    client.force_login(clinician)
    html = client.get(reverse("corpus:detail", args=[ward.pk])).content.decode()
    assert '<td>Phone number <small><code class="identifier-type">PHONE</code></small></td>' in html
    assert "Scan again" not in html
    assert client.post(reverse("deid:corpus_scan", args=[ward.pk])).status_code == 403
    assert DeidJob.objects.count() == 1


# ---------------------------------------------------------------- the API


@pytest.fixture
def token(researcher, project, make_token):
    return make_token(researcher, [project])[1]


@pytest.fixture
def make_token():
    from webapp.api import tokens

    return lambda user, projects: tokens.create(user, name="t", projects=projects, ceiling="roles", days=30)


def auth(secret):
    return {"Authorization": f"Bearer {secret}"}


def test_the_api_starts_a_scan_and_answers_its_latest_result(client, ward, researcher, token, fake):
    url = f"/api/corpora/{ward.pk}/scans"
    assert client.get(f"{url}/latest", headers=auth(token)).status_code == 404
    started = client.post(url, headers=auth(token))
    assert started.status_code == 202 and started.json()["status"] == "queued"
    assert started.json()["corpus"] == ward.pk and started.json()["notes_total"] == 3
    assert client.post(url, headers=auth(token)).status_code == 409  # one at a time
    scanning.run(claimed(DeidJob.objects.get(pk=started.json()["id"])))
    latest = client.get(f"{url}/latest", headers=auth(token))
    body = latest.json()
    assert latest.status_code == 200 and body["status"] == "done" and body["counts"] == EXPECTED
    assert (body["notes_done"], body["notes_total"], body["notes_with_findings"]) == (3, 3, 2)
    no_identifier_in(latest.content.decode(), started.content.decode())
    assert client.get(f"/api/corpora/{ward.pk}", headers=auth(token)).json()["deidentified"] is False


def test_a_clinicians_token_reads_the_result_but_cannot_start_one(
    client, ward, clinician, researcher, project, make_token, fake
):
    _, secret = make_token(clinician, [project])
    assert client.post(f"/api/corpora/{ward.pk}/scans", headers=auth(secret)).status_code == 403
    scanning.run(claimed(launched(ward, researcher)))
    latest = client.get(f"/api/corpora/{ward.pk}/scans/latest", headers=auth(secret))
    assert latest.status_code == 200 and latest.json()["counts"] == EXPECTED


def test_a_non_member_gets_404_for_both(client, ward, django_user_model, make_token, fake):
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere")
    outsider = make_member(django_user_model.objects.create_user(username="out"), "researcher", elsewhere)
    _, secret = make_token(outsider, [elsewhere])
    assert client.post(f"/api/corpora/{ward.pk}/scans", headers=auth(secret)).status_code == 404
    assert client.get(f"/api/corpora/{ward.pk}/scans/latest", headers=auth(secret)).status_code == 404
    assert not DeidJob.objects.exists()
