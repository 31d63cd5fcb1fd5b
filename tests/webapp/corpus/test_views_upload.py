"""The import page: researchers upload files; problems are listed and nothing is imported."""
import io
import json
import zipfile

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note


def jsonl(*objs) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def post(client, **data):
    return client.post(reverse("corpus:upload"), data)


def test_a_researcher_imports_a_jsonl_file_into_a_new_corpus(client, researcher):
    client.force_login(researcher)
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "PA 90/60"}, {"id": "b", "text": "FC 120"}))
    response = post(client, kind="notes", corpus="ed", language="it", file=upload)
    assert response.status_code == 302
    corpus = Corpus.objects.get(name="ed")
    assert sorted(corpus.notes.values_list("external_id", flat=True)) == ["a", "b"]
    event = AuditEvent.objects.get(action="import_notes")
    assert event.actor == researcher and event.details["created"] == 2
    assert "PA 90/60" not in json.dumps(event.details)


def test_a_bad_file_lists_each_problem_with_its_line_and_imports_nothing(client, researcher):
    client.force_login(researcher)
    body = jsonl({"id": "a", "text": "ok"}) + b"{not json\n" + jsonl({"id": "a", "text": "dup"})
    response = post(client, kind="notes", corpus="ed", language="it", file=SimpleUploadedFile("n.jsonl", body))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Nothing was imported" in html
    assert "n.jsonl line 2" in html
    assert "n.jsonl line 3" in html
    assert not Corpus.objects.filter(name="ed").exists()
    assert Note.objects.count() == 0


def test_a_zip_of_brat_files_is_imported_as_notes(client, researcher):
    client.force_login(researcher)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("case1.txt", "Febbre 39 C.")
        zf.writestr("case1.ann", "T1\tCLINENTITY 0 6\tFebbre\n")
        zf.writestr("sub/case2.txt", "Nessun dolore.")
        zf.writestr("sub/case2.ann", "")
    response = post(client, kind="notes", corpus="brat", language="it",
                    file=SimpleUploadedFile("cases.zip", buffer.getvalue()))
    assert response.status_code == 302, response.content.decode()
    assert sorted(Note.objects.values_list("external_id", flat=True)) == ["case1", "case2"]


def test_annotations_need_an_existing_corpus(client, researcher):
    client.force_login(researcher)
    upload = SimpleUploadedFile("a.jsonl", jsonl({"note_id": "a", "task": "heart rate", "label": "x", "evidence": []}))
    response = post(client, kind="annotations", corpus="missing", file=upload)
    assert response.status_code == 200
    assert "No such corpus" in response.content.decode()


def test_a_broken_zip_is_reported(client, researcher):
    client.force_login(researcher)
    response = post(client, kind="notes", corpus="z", language="en", file=SimpleUploadedFile("x.zip", b"not a zip"))
    assert "not a valid zip archive" in response.content.decode()
    assert not Corpus.objects.exists()
