"""Corpus names are unique within a project, not site-wide: a name another project uses is free
in one's own (the import neither refuses it as "taken" nor touches the other corpus), a name is
still unique inside its project, and a command naming a corpus that is in several projects asks
for the project."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError

from tests.projects import default_project
from webapp.corpus.access import CorpusNotFound, corpus_named
from webapp.corpus.importing import import_notes
from webapp.corpus.models import Corpus, Note
from webapp.projects.models import Project

from .test_views_upload import data_dir, imported, sent  # noqa: F401 (fixtures)


@pytest.fixture
def theirs(db):
    """Project B's corpus "ed", with one note."""
    project = Project.objects.create(name="Oncology", slug="onco")
    corpus = Corpus.objects.create(project=project, name="ed", language="en")
    Note.objects.create(corpus=corpus, external_id="b1", text="Oncology note.")
    return corpus


@pytest.mark.usefixtures("sent", "data_dir")
def test_a_name_another_project_uses_is_free_on_the_import_page(
    client, researcher, theirs, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    upload = SimpleUploadedFile("notes.jsonl", (json.dumps({"id": "a", "text": "PA 90/60"}) + "\n").encode())
    job, html = imported(
        client, django_capture_on_commit_callbacks, kind="notes", corpus="ed", language="it", file=upload
    )
    assert "taken" not in html and job.created_count == 1
    ours = Corpus.objects.get(name="ed", project=default_project())
    assert ours != theirs and list(ours.notes.values_list("external_id", flat=True)) == ["a"]
    assert list(theirs.notes.values_list("external_id", flat=True)) == ["b1"]


def test_an_import_in_ones_own_project_never_reaches_the_other_projects_corpus(theirs, tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"id": "a", "text": "HR 130"}) + "\n")
    refused = import_notes(notes, "ed", project=default_project())
    assert refused.problems and "does not exist" in str(refused.problems[0]) and "taken" not in str(refused.problems)
    report = import_notes(notes, "ed", language="en", create=True, project=default_project())
    assert not report.problems and Corpus.objects.filter(name="ed").count() == 2
    assert theirs.notes.count() == 1


def test_a_name_is_still_unique_within_its_project(theirs):
    with pytest.raises(IntegrityError):
        Corpus.objects.create(project=theirs.project, name="ed", language="en")


def test_a_command_naming_a_corpus_of_several_projects_asks_for_the_project(theirs):
    ours = Corpus.objects.create(project=default_project(), name="ed", language="en")
    with pytest.raises(CorpusNotFound, match="--project"):
        corpus_named("ed")
    assert corpus_named("ed", "onco") == theirs and corpus_named("ed", default_project()) == ours
    with pytest.raises(CorpusNotFound, match="no corpus named 'ward' in project 'onco'"):
        corpus_named("ward", "onco")
    with pytest.raises(CommandError, match="several projects"):
        call_command("launch_relevance_job", "ed")
