"""Need-to-know across projects: every URL pattern that names an object, for every role a member of
project A can hold, as a page (GET), an htmx fragment (GET with HX-Request), a download and a
form post (POST), pointed at project B's objects. Nothing answers 200, everything answers 404 (the
object's existence is not disclosed), and nothing of project B changes. Then the lists: no page a
member of A opens names B's objects. And the three reproductions of the issue, by name."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from webapp.accounts.roles import Role
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, Task
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob
from webapp.projects.models import Membership, Project
from webapp.review.models import PeakDecision, ReviewRound, ValidationSet
from webapp.training.models import LabeledSplit, TrainingRun

SECRET = "Zebra-ward-secret"  # in every name of project B, so a page that lists one shows it


def _patterns(patterns=None, prefix="", namespace=""):
    """(route, view name with its namespace) of every URL pattern."""
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(p, URLResolver):
            inner = f"{namespace}:{p.namespace}" if namespace and p.namespace else (p.namespace or namespace)
            yield from _patterns(p.url_patterns, prefix + str(p.pattern), inner or "")
        elif isinstance(p, URLPattern) and p.name:
            yield prefix + str(p.pattern), f"{namespace}:{p.name}" if namespace else p.name


def _object_patterns():
    """(route, view name) of every app URL that takes an object's id."""
    named = ("<int:", "<slug:")
    return [(r, name) for r, name in _patterns() if not r.startswith("admin/") and any(n in r for n in named)]


@pytest.fixture
def other(db, django_user_model):
    """Project B with one of everything, made by B's own researcher."""
    project = Project.objects.create(name=f"{SECRET} study", slug="zebra")
    owner = django_user_model.objects.create_user(username="zed")
    Membership.objects.create(project=project, user=owner, role=Role.RESEARCHER)
    corpus = Corpus.objects.create(project=project, name=f"{SECRET} corpus", language="en")
    note = Note.objects.create(corpus=corpus, external_id="z1", text=f"{SECRET}: HR 130 bpm.")
    task = Task.objects.create(
        project=project, slug="zebra-task", description=f"{SECRET} task", options=["y", "n"], origin="app"
    )
    Annotation.objects.create(note=note, task=task, label="y", annotator_name="gold", evidence=[[0, 4]])
    # A base model is shared by every project (its name is no secret); the model B trained is B's.
    model = ModelVersion.objects.create(name="shared base", family="llama", path="/nowhere")
    profile = PeakProfile.objects.create(name="zebra-profile")
    job = RelevanceJob.objects.create(corpus=corpus, model_version=model, created_by=owner)
    dataset = DatasetVersion.objects.create(
        name=f"{SECRET} dataset", corpus=corpus, model_version=model, profile=profile, status="done"
    )
    export = DatasetExport.objects.create(dataset=dataset, format="jsonl", status="done", created_by=owner)
    evaluation = RelevanceEvaluation.objects.create(corpus=corpus, model_version=model, profile=profile)
    vset = ValidationSet.objects.create(
        corpus=corpus,
        model_version=model,
        method="lrp",
        template="t",
        config_key="k",
        name=f"{SECRET} set",
        items=[[note.pk, task.pk]],
        notes_available=1,
        grid=[],
    )
    split = LabeledSplit.objects.create(corpus=corpus, seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(name=f"{SECRET} run", kind="sft", model_version=model, split=split)
    run.produced_model = ModelVersion.objects.create(name=f"{SECRET} dsm", family="llama", path="/b", parent=model)
    run.save(update_fields=["produced_model"])
    imported = ImportJob.objects.create(project=project, kind="notes", corpus_name=corpus.name, file_name="z.jsonl")
    PeakDecision.objects.create(
        note=note,
        task=task,
        model_version=model,
        method="lrp",
        template="t",
        start=0,
        end=4,
        decision="accept",
        reviewer=owner,
    )
    review_round = ReviewRound.objects.create(
        corpus=corpus,
        model_version=model,
        profile=profile,
        method="lrp",
        template="t",
        name=f"{SECRET} round",
        k=1,
        created_by=owner,
    )
    return {
        "corpus_id": corpus.pk,
        "note_id": note.pk,
        "task_id": task.pk,
        "corpus:job_id": imported.pk,
        "interchange:job_id": imported.pk,
        "pipeline:job_id": job.pk,
        "dataset_id": dataset.pk,
        "export_id": export.pk,
        "evaluation_id": evaluation.pk,
        "set_id": vset.pk,
        "round_id": review_round.pk,
        "run_id": run.pk,
        "fmt": "jsonl",
        "slug": project.slug,
        "membership_id": Membership.objects.get(project=project).pk,
        "project": project,
    }


def _kwargs(route, name, ids):
    kwargs = {}
    for part in route.split("<")[1:]:
        kind, key = part.split(">", 1)[0].split(":")
        scoped = f"{name.split(':', 1)[0]}:{key}"
        kwargs[key] = ids.get(scoped, ids.get(key)) if kind in ("int", "slug") else ids["fmt"]
        assert kwargs[key] is not None, f"the matrix has no object of project B for {scoped} in {route}: add one"
    return kwargs


def _state_of(project) -> list:
    """Every row of project B that a request could change (audit rows aside: a refusal is audited)."""
    rows = []
    for model in (
        Corpus,
        Note,
        Task,
        Annotation,
        ImportJob,
        RelevanceJob,
        DatasetVersion,
        DatasetExport,
        RelevanceEvaluation,
        ValidationSet,
        LabeledSplit,
        TrainingRun,
        PeakDecision,
        ReviewRound,
    ):
        scoped = (
            model.objects.filter(**{f"{model.project_paths[0]}": project})
            if model is not TrainingRun
            else (model.objects.filter(split__corpus__project=project))
        )
        rows.append(sorted(map(repr, scoped.values())))
    rows.append(sorted(map(repr, Membership.objects.filter(project=project).values())))
    return rows


@pytest.fixture
def member(django_user_model, request):
    """A member of project A (the default test project) with the parametrised role."""
    from tests.projects import make_member

    user = django_user_model.objects.create_user(username=f"a-{request.param}")
    return make_member(user, request.param)


@pytest.mark.parametrize("member", [role.value for role in Role], indirect=True)
def test_no_object_of_another_project_answers_anything_but_404(client, member, other):
    client.force_login(member)
    before = _state_of(other["project"])
    answered = {}
    for route, name in _object_patterns():
        url = reverse(name, kwargs=_kwargs(route, name, other))
        form = {"decision": "accept", "retired": "1", "reviewer": member.pk}
        for how, response in (
            ("GET", client.get(url)),
            ("htmx", client.get(url, headers={"HX-Request": "true"})),
            ("POST", client.post(url, form)),
        ):
            # 405 (a GET to a POST-only action) is the same for every id: it discloses nothing.
            if response.status_code not in (404, 405) or (how == "POST" and response.status_code != 404):
                answered[(how, route)] = response.status_code
    assert answered == {}
    assert _state_of(other["project"]) == before


@pytest.mark.parametrize("member", [role.value for role in Role], indirect=True)
def test_no_list_or_form_names_another_projects_objects(client, member, other):
    client.force_login(member)
    leaked = []
    for route, name in _patterns():
        if route.startswith("admin/") or "<" in route or name in {"logout", "healthz"}:
            continue
        response = client.get(reverse(name))
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if SECRET.encode() in body:
            leaked.append(route)
    assert leaked == []


def test_the_three_reproductions_are_refused(client, django_user_model, other):
    """clin2 reads a note of a corpus nobody shared with them; res2 downloads res1's export and
    rebuilds res1's dataset."""
    from tests.projects import make_member

    clin2 = make_member(django_user_model.objects.create_user(username="clin2"), Role.CLINICIAN)
    res2 = make_member(django_user_model.objects.create_user(username="res2"), Role.RESEARCHER)
    client.force_login(clin2)
    assert client.get(reverse("corpus:note", args=[other["corpus_id"], other["note_id"]])).status_code == 404
    client.force_login(res2)
    download = reverse("datasets:export_download", args=[other["dataset_id"], other["export_id"]])
    assert client.get(download).status_code == 404
    before = DatasetVersion.objects.count()
    assert client.post(reverse("datasets:build_again", args=[other["dataset_id"]])).status_code == 404
    assert DatasetVersion.objects.count() == before


def test_a_member_of_both_projects_sees_both_and_a_site_admin_sees_every_project(client, researcher, site_admin, other):
    client.force_login(researcher)
    assert client.get(reverse("corpus:detail", args=[other["corpus_id"]])).status_code == 404
    Membership.objects.create(project=other["project"], user=researcher, role=Role.RESEARCHER)
    assert client.get(reverse("corpus:detail", args=[other["corpus_id"]])).status_code == 200
    client.force_login(site_admin)
    assert SECRET in client.get(reverse("corpus:list")).content.decode()


def test_a_role_missing_in_the_objects_own_project_is_a_403(client, django_user_model, other):
    """A clinician of project B knows the corpus exists (it is theirs) but may not launch on it."""
    clinician_b = django_user_model.objects.create_user(username="bea")
    Membership.objects.create(project=other["project"], user=clinician_b, role=Role.CLINICIAN)
    client.force_login(clinician_b)
    assert client.get(reverse("corpus:note", args=[other["corpus_id"], other["note_id"]])).status_code == 200
    assert client.post(reverse("datasets:build_again", args=[other["dataset_id"]])).status_code == 403
    assert client.get(reverse("corpus:import_detail", args=[other["corpus:job_id"]])).status_code == 403


def test_a_timestamp_is_not_needed(other):
    assert other["project"].created <= timezone.now()
