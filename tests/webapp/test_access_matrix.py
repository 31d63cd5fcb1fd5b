"""Every view x every role: allowed, forbidden, or redirected to login. A user of no project does
not find an object (404: another project's object is not disclosed) and is refused (403) on pages
without one (webapp.projects.scoping)."""

import pytest
from django.urls import reverse

from tests.projects import default_project
from webapp.corpus.models import Corpus, Note

ROLES = ["anonymous", "norole", "clinician", "researcher", "admin"]
VIEWERS = {"clinician", "researcher", "admin"}
IMPORTERS = {"researcher", "admin"}
OBJECT_VIEWS = {"corpus-detail", "note", "task-edit", "import", "review-notes", "review-note", "evaluation"}


@pytest.fixture
def note(db):
    corpus = Corpus.objects.create(project=default_project(), name="c1", language="en")
    return Note.objects.create(corpus=corpus, external_id="n1", text="HR 120 bpm.")


def _evaluation(note):
    from webapp.evaluation.models import RelevanceEvaluation
    from webapp.pipeline.models import ModelVersion, PeakProfile

    return RelevanceEvaluation.objects.create(
        corpus=note.corpus, model_version=ModelVersion.objects.first(), profile=PeakProfile.objects.first()
    )


def _task():
    from webapp.corpus.models import Task

    return Task.objects.create(
        project=default_project(), slug="fever", description="fever", options=["yes", "no"], origin="app"
    )


def _import_job(note):
    from webapp.corpus.models import ImportJob

    return ImportJob.objects.create(
        project=default_project(), kind="notes", corpus_name=note.corpus.name, file_name="notes.jsonl"
    )


def _urls(note):
    return {
        "home": (reverse("home"), VIEWERS),
        "corpus-list": (reverse("corpus:list"), VIEWERS),
        "corpus-detail": (reverse("corpus:detail", args=[note.corpus_id]), VIEWERS),
        "note": (reverse("corpus:note", args=[note.corpus_id, note.pk]), VIEWERS),
        "tasks": (reverse("corpus:tasks"), VIEWERS),
        "task-new": (reverse("corpus:task_new"), IMPORTERS),
        "task-edit": (reverse("corpus:task_edit", args=[_task().pk]), IMPORTERS),
        "upload": (reverse("corpus:upload"), IMPORTERS),
        "imports": (reverse("corpus:import_list"), IMPORTERS),
        "import": (reverse("corpus:import_detail", args=[_import_job(note).pk]), IMPORTERS),
        "admin": (reverse("admin:index"), {"admin"}),
        "audit": (reverse("audit:list"), {"admin"}),
        "jobs": (reverse("pipeline:job_list"), VIEWERS),
        "job-launch": (reverse("pipeline:job_launch"), IMPORTERS),
        "datasets": (reverse("datasets:list"), VIEWERS),
        "dataset-new": (reverse("datasets:new"), IMPORTERS),
        "review": (reverse("review:index"), VIEWERS),
        "review-report": (reverse("review:report"), VIEWERS),
        "review-notes": (reverse("review:notes", args=[note.corpus_id]), VIEWERS),
        "review-note": (reverse("review:note", args=[note.corpus_id, note.pk]), VIEWERS),
        "training": (reverse("training:run_list"), VIEWERS),
        "training-new": (reverse("training:run_new"), IMPORTERS),
        "training-compare": (reverse("training:compare"), VIEWERS),
        "evaluations": (reverse("evaluation:list"), VIEWERS),
        "evaluation-new": (reverse("evaluation:new"), IMPORTERS),
        "evaluation": (reverse("evaluation:detail", args=[_evaluation(note).pk]), VIEWERS),
    }


@pytest.fixture
def user_for(request, clinician, researcher, admin_user, norole_user):
    return {"clinician": clinician, "researcher": researcher, "admin": admin_user, "norole": norole_user}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    "view",
    [
        "home",
        "corpus-list",
        "corpus-detail",
        "note",
        "tasks",
        "task-new",
        "task-edit",
        "upload",
        "imports",
        "import",
        "admin",
        "audit",
        "jobs",
        "job-launch",
        "datasets",
        "dataset-new",
        "review",
        "review-report",
        "review-notes",
        "review-note",
        "training",
        "training-new",
        "training-compare",
        "evaluations",
        "evaluation-new",
        "evaluation",
    ],
)
def test_each_view_answers_each_role_as_its_capabilities_say(client, note, user_for, role, view):
    url, allowed = _urls(note)[view]
    if role != "anonymous":
        client.force_login(user_for[role])
    response = client.get(url)
    if role == "anonymous":
        assert response.status_code == 302
        assert "login" in response["Location"]
    elif role in allowed:
        assert response.status_code == 200
    elif view == "admin":
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    elif role == "norole" and view in OBJECT_VIEWS:
        assert response.status_code == 404
    else:
        assert response.status_code == 403


@pytest.mark.parametrize("role", ["clinician", "norole"])
def test_a_post_to_the_import_page_is_refused_without_the_role(client, user_for, role, tmp_path):
    client.force_login(user_for[role])
    upload = tmp_path / "n.jsonl"
    upload.write_text('{"id": "a", "text": "x"}\n')
    with upload.open("rb") as fh:
        response = client.post(
            reverse("corpus:upload"), {"kind": "notes", "corpus": "new", "language": "en", "file": fh}
        )
    assert response.status_code == 403
    assert not Corpus.objects.filter(name="new").exists()


def test_a_note_of_another_corpus_is_not_found(client, clinician, note):
    other = Corpus.objects.create(project=default_project(), name="c2", language="it")
    client.force_login(clinician)
    response = client.get(reverse("corpus:note", args=[other.pk, note.pk]))
    assert response.status_code == 404


def test_the_health_check_needs_no_login(client, db):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_logout_is_a_post_and_ends_the_session(client, clinician):
    client.force_login(clinician)
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("home")).status_code == 302
