"""The review menus and every choice list are scoped to the project being viewed: on project A's
review, queue, note, compare, round and export pages nothing of project B is named (its trained
model, its own tasks), A's queue defaults to a model A may use, the home page counts only the
tasks the user may see, and an id of B's task or model in a form of A is an unknown choice."""

import pytest

from tests.conftest import _make_user
from webapp.corpus.models import Corpus, Note, Task
from webapp.pipeline.models import ModelVersion, PeakProfile
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role
from webapp.review import catalog, rounds
from webapp.review.models import PeakDecision, ReviewRound
from webapp.training.models import LabeledSplit, TrainingRun

from .fabricate import TEXT, add_map, query, word_span

B_MODEL = "aaa-oncology-dsm"  # sorts before every model of A: the old default
B_TASK = "oncologia-only-task"
B_GROUP = "oncología"
B_PROFILE = "oncology-tuned"  # saved by a clinician of B


@pytest.fixture
def project_b(db, base):
    """Project B: its own task and the model its training run produced, and a map of that model."""
    project = Project.objects.create(name="Oncology", slug="onco")
    corpus = Corpus.objects.create(project=project, name="onco-notes", language="en")
    task = Task.objects.create(
        project=project, slug=B_TASK, description="oncology only", options=["y", "n"], group=B_GROUP, origin="app"
    )
    split = LabeledSplit.objects.create(corpus=corpus, seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(name="onco run", kind="sft", model_version=base, split=split)
    run.produced_model = ModelVersion.objects.create(name=B_MODEL, family="llama", path="/b", parent=base)
    run.save(update_fields=["produced_model"])
    note = Note.objects.create(corpus=corpus, external_id="b1", text=TEXT)
    add_map(note, task, run.produced_model, {"130": 0.9})
    profile = PeakProfile.objects.create(project=project, name=B_PROFILE, version=1)
    return {"project": project, "task": task, "model": run.produced_model, "profile": profile, "corpus": corpus}


@pytest.fixture
def a_maps(note, tasks, base):
    return [add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.8})]


def _pages(corpus, note, rnd):
    return [
        f"/review/{corpus.pk}/",
        f"/review/{corpus.pk}/rounds/",
        f"/review/rounds/{rnd.pk}/",
        f"/review/{corpus.pk}/notes/{note.pk}/",
        f"/review/{corpus.pk}/notes/{note.pk}/compare/",
        f"/review/{corpus.pk}/compare/summary/",
        f"/review/{corpus.pk}/preview/",
        f"/review/{corpus.pk}/validation/",
        f"/interchange/corpora/{corpus.pk}/export/",
        "/datasets/new/",
        "/evaluations/new/",
        "/",
        "/review/",
    ]


@pytest.fixture
def a_round(corpus, tasks, base, sharp, clinician, a_maps):
    common = {"model": base, "method": "attnlrp", "template": "en", "profile": sharp, "k": 1}
    return rounds.create_round(corpus, name="july", tasks=[tasks["heart"]], reviewers=[clinician], **common)


@pytest.mark.parametrize("also_in_b", [False, True], ids=["member-of-A", "member-of-both"])
def test_no_page_of_project_a_names_project_bs_model_or_task(
    client_for, django_user_model, corpus, note, a_round, project_b, also_in_b
):
    user = _make_user(django_user_model, "ana", Role.ADMIN)
    if also_in_b:
        Membership.objects.create(project=project_b["project"], user=user, role=Role.ADMIN)
    client = client_for(user)
    leaked = {}
    for url in _pages(corpus, note, a_round):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        named = [name for name in (B_MODEL, B_TASK, B_PROFILE) if name in body]
        if url in ("/", "/datasets/new/", "/evaluations/new/") and also_in_b:
            named = []  # pages of no project list what the user may use in any of theirs
        elif url == "/" and B_GROUP in body:
            named.append(B_GROUP)
        if named:
            leaked[url] = named
    assert leaked == {}


def test_the_home_pages_tasks_by_group_counts_only_the_tasks_the_user_may_see(
    client_for, django_user_model, clinician, project_b
):
    page = client_for(clinician).get("/").content.decode()
    assert B_GROUP not in page
    Membership.objects.create(project=project_b["project"], user=clinician, role=Role.CLINICIAN)
    clinician.__dict__.pop("_dsm_memberships", None)
    assert B_GROUP in client_for(clinician).get("/").content.decode()


def test_project_as_queue_defaults_to_a_model_a_may_use(client_for, clinician, corpus, base, a_maps, project_b):
    """With no model marked default the first by name is taken: B's sorted first and A's queue
    had nothing to review."""
    ModelVersion.objects.update(is_default=False)
    response = client_for(clinician).get(f"/review/{corpus.pk}/queue/")
    assert response.status_code == 302 and f"model={base.pk}" in response["Location"]
    assert B_MODEL not in [m.name for m in catalog.model_versions(corpus.project_id)]


def test_a_query_naming_bs_model_or_task_falls_back_as_for_an_unknown_id(
    client_for, clinician, corpus, note, a_maps, project_b
):
    url = f"/review/{corpus.pk}/?model={project_b['model'].pk}&task={project_b['task'].pk}"
    page = client_for(clinician).get(url).content.decode()
    assert B_MODEL not in page and B_TASK not in page
    page = client_for(clinician).get(f"/review/{corpus.pk}/notes/{note.pk}/?model={project_b['model'].pk}")
    assert B_MODEL not in page.content.decode()


def test_a_decision_naming_bs_task_or_model_is_refused_as_unknown(
    client_for, clinician, corpus, note, tasks, base, sharp, a_maps, project_b
):
    a, b = word_span(TEXT, "130")
    form = {"start": a, "end": b, "decision": "accept", "version": 0, "k": 1, "sigma": 1.0, "lower": 0.2}
    form.update(upper=0.4)
    url = f"/review/{corpus.pk}/notes/{note.pk}/decide/"
    for swapped in ({"task": project_b["task"].pk}, {"model": project_b["model"].pk}):
        response = client_for(clinician).post(url, {**query(tasks["heart"], base, sharp), **form, **swapped})
        assert response.status_code in (302, 400)
        assert not PeakDecision.objects.exists()
    response = client_for(clinician).post(url, {**query(tasks["heart"], base, sharp), **form})
    assert PeakDecision.objects.count() == 1  # the control: A's own task and model are recorded


def test_the_round_form_offers_the_projects_tasks_and_refuses_bs(
    client_for, researcher, clinician, corpus, tasks, base, sharp, a_maps, project_b
):
    client = client_for(researcher)
    page = client.get(f"/review/{corpus.pk}/rounds/").content.decode()
    assert "heart-rate" in page and B_TASK not in page
    form = {
        "name": "crafted",
        "reviewers": [clinician.pk],
        "k": 1,
        "guideline": "",
        **query(tasks["heart"], base, sharp),
    }
    response = client.post(f"/review/{corpus.pk}/rounds/", {**form, "tasks": [project_b["task"].pk]})
    assert response.status_code == 200 and not ReviewRound.objects.exists()
    assert B_TASK not in response.content.decode()
    response = client.post(f"/review/{corpus.pk}/rounds/", {**form, "tasks": [tasks["heart"].pk]})
    assert response.status_code == 302 and ReviewRound.objects.count() == 1


def test_the_export_form_of_a_refuses_bs_model_by_name_even_to_a_member_of_both(
    client_for, researcher, corpus, project_b
):
    Membership.objects.create(project=project_b["project"], user=researcher, role=Role.RESEARCHER)
    response = client_for(researcher).get(f"/interchange/corpora/{corpus.pk}/export/?format=brat&peaks={B_MODEL}")
    assert response.status_code == 200 and not response.streaming
    assert B_MODEL not in response.content.decode()


def test_a_profile_saved_on_as_note_is_as_and_bs_corpus_is_unknown(client_for, clinician, note, project_b):
    client = client_for(clinician)
    form = {"name": "ward-tuned", "k": 3, "sigma": 1, "lower": 0.2, "upper": 0.5}
    assert client.post("/review/profiles/save/", {**form, "corpus": project_b["corpus"].pk}).status_code == 404
    assert client.post("/review/profiles/save/", {**form, "corpus": note.corpus_id}).status_code == 302
    saved = PeakProfile.objects.get(name="ward-tuned")
    assert saved.project_id == note.corpus.project_id
    assert saved not in PeakProfile.objects.of_project(project_b["project"].pk)


def test_a_dataset_of_as_corpus_with_bs_profile_is_refused_even_to_a_member_of_both(
    client_for, researcher, corpus, base, project_b
):
    from webapp.datasets.forms import BuildForm

    Membership.objects.create(project=project_b["project"], user=researcher, role=Role.RESEARCHER)
    researcher.__dict__.pop("_dsm_memberships", None)
    data = {"name": "mixed", "corpus": corpus.pk, "model_version": base.pk, "profile": project_b["profile"].pk}
    form = BuildForm(data, user=researcher)
    assert not form.is_valid() and "of the project of the corpus" in form.errors["profile"][0]
