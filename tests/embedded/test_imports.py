"""Imports on SQLite: notes and annotations through the commands, re-imports, --update, a refused
file (nothing written), the demo corpus, and search over what was imported."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.webapp.corpus.conftest import write_jsonl
from webapp.corpus import search
from webapp.corpus.models import Annotation, Corpus, Note, Task, text_hash
from webapp.home.demo import DEMO_CORPUS, seed

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

NOTES = [
    {"id": "n1", "text": "PERCHÉ il paziente ha dolori toracici. FC 120 bpm, portatore di pacemaker."},
    {"id": "n2", "text": "Nessun dolore. Perché tornare?"},
    {"id": "n3", "text": "Febbre alta."},
]


def run(command, *args):
    out = StringIO()
    call_command(command, *[str(a) for a in args], stdout=out)
    return out.getvalue()


def found(corpus, query):
    notes = search.matching(Note.objects.filter(corpus=corpus), query, language=corpus.language)
    return sorted(notes.values_list("external_id", flat=True))


@pytest.fixture
def ward(tmp_path):
    run(
        "import_notes", write_jsonl(tmp_path / "notes.jsonl", NOTES), "--corpus", "ward", "--create", "--language", "it"
    )
    return Corpus.objects.get(name="ward")


def test_notes_are_imported_once_and_found_by_their_words(ward, tmp_path):
    assert Note.objects.filter(corpus=ward).count() == 3
    n1 = Note.objects.get(external_id="n1")
    assert n1.text == NOTES[0]["text"] and n1.content_hash == text_hash(n1.text)
    assert "0 created, 0 updated, 3 unchanged" in run(
        "import_notes", write_jsonl(tmp_path / "again.jsonl", NOTES), "--corpus", "ward"
    )
    assert found(ward, "perché") == found(ward, "PERCHE") == ["n1", "n2"]  # case and accents, non-ASCII
    assert found(ward, "dolore") == ["n1", "n2"]
    assert found(ward, '"dolori toracici"') == ["n1"]


def test_an_update_changes_the_text_and_what_search_finds(ward, tmp_path):
    changed = [{**NOTES[2], "text": "Sincope al mattino."}]
    out = run("import_notes", write_jsonl(tmp_path / "v2.jsonl", changed), "--corpus", "ward", "--update")
    assert "0 created, 1 updated" in out
    assert Note.objects.get(external_id="n3").text == "Sincope al mattino."
    assert found(ward, "febbre") == [] and found(ward, "sincope") == ["n3"]


def test_a_refused_file_says_which_line_and_why_and_writes_nothing(ward, tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "n9", "text": "Fine."}, {"id": "n10"}])
    with pytest.raises(CommandError) as info:
        run("import_notes", bad, "--corpus", "ward")
    assert str(info.value).startswith("nothing imported, ") and "line 2" in str(info.value)
    assert Note.objects.filter(corpus=ward).count() == 3


def test_annotations_are_imported_against_the_notes_and_tasks(ward, tmp_path):
    Task.objects.create(slug="presence-of-pacemaker", description="presence of pacemaker", options=["y", "n"])
    start = NOTES[0]["text"].index("pacemaker")
    gold = [
        {"note_id": "n1", "task": "presence-of-pacemaker", "label": "y", "evidence": [[start, start + 9]]},
        {"note_id": "n2", "task": "presence of pacemaker", "label": "n"},
    ]
    path = write_jsonl(tmp_path / "gold.jsonl", gold)
    assert "2 created, 0 updated, 0 unchanged" in run("import_annotations", path, "--corpus", "ward")
    assert "0 created, 0 updated, 2 unchanged" in run("import_annotations", path, "--corpus", "ward")
    n1 = Annotation.objects.get(note__external_id="n1")
    assert (n1.label, n1.evidence) == ("y", [[start, start + 9]])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"note_id": "n1", "task": "no-such-task", "label": "y"}])
    with pytest.raises(CommandError, match="line 1: unknown task 'no-such-task'"):
        run("import_annotations", bad, "--corpus", "ward")
    assert Annotation.objects.count() == 2


def test_the_demo_seeds_its_corpus_and_queues_its_first_job(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = seed(notes=20, stdout=StringIO())
    corpus = Corpus.objects.get(name=DEMO_CORPUS)
    assert Note.objects.filter(corpus=corpus).count() == 20 and job.corpus == corpus
    assert seed(notes=20, stdout=StringIO()) == job  # idempotent: no second job, no new note
    assert Note.objects.filter(corpus=corpus).count() == 20
    word = Note.objects.filter(corpus=corpus).first().text.split()[0]
    assert found(corpus, word)  # the demo corpus is searchable
