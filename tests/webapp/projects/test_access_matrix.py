"""Need-to-know across projects: every URL pattern that names an object, for every role a member of
project A can hold, as a page (GET), an htmx fragment (GET with HX-Request), a download and a
form post (POST), pointed at project B's objects. Nothing answers 200, everything answers 404 (the
object's existence is not disclosed), and nothing of project B changes. Then the lists: no page a
member of A opens names B's objects. And the three reproductions of the issue, by name."""

from urllib.parse import quote_plus

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from tests.webapp.routes import named_routes
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, Task
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.deid.models import DeidJob
from webapp.erasure.models import ErasureRequest
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import MapImportJob, ModelVersion, PeakProfile, RelevanceJob, RelevanceMap
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role
from webapp.review.models import AddedSpan, PeakDecision, ReviewRound, ValidationSet
from webapp.training.models import LabeledSplit, TrainingRun

SECRET = "Zebra-ward-secret"  # in every name of project B, so a page that lists one shows it


def _object_patterns():
    """(route, view name) of every app URL that takes an object's id."""
    named = ("<int:", "<slug:")
    return [(r, name) for r, name in named_routes() if not r.startswith("admin/") and any(n in r for n in named)]


def _one_of_everything(project, owner, prefix: str, base: ModelVersion) -> dict:
    """One object of every kind in `project`, made by its researcher `owner`; every name starts
    with `prefix`, so a page that lists one shows it."""
    slug = project.slug
    corpus = Corpus.objects.create(project=project, name=f"{prefix} corpus", language="en")
    note = Note.objects.create(corpus=corpus, external_id=f"{slug}1", text=f"{prefix}: HR 130 bpm.")
    task = Task.objects.create(
        project=project, slug=f"{slug}-task", description=f"{prefix} task", options=["y", "n"], origin="app"
    )
    Annotation.objects.create(note=note, task=task, label="y", annotator_name="gold", evidence=[[0, 4]])
    offsets, scores = np.array([[0, 4]], np.int32), np.array([0.9], np.float32)
    RelevanceMap.objects.store_one(note, task, base, offsets, scores, method="attnlrp", template="en")
    profile = PeakProfile.objects.create(project=project, name=f"{prefix} profile")
    job = RelevanceJob.objects.create(corpus=corpus, model_version=base, created_by=owner)
    dataset = DatasetVersion.objects.create(
        name=f"{prefix} dataset", corpus=corpus, model_version=base, profile=profile, status="done"
    )
    export = DatasetExport.objects.create(dataset=dataset, format="jsonl", status="done", created_by=owner)
    evaluation = RelevanceEvaluation.objects.create(corpus=corpus, model_version=base, profile=profile)
    vset = ValidationSet.objects.create(
        corpus=corpus,
        model_version=base,
        method="lrp",
        template="t",
        config_key="k",
        name=f"{prefix} set",
        items=[[note.pk, task.pk]],
        notes_available=1,
        grid=[],
    )
    split = LabeledSplit.objects.create(corpus=corpus, seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(name=f"{prefix} run", kind="sft", model_version=base, split=split)
    run.produced_model = ModelVersion.objects.create(name=f"{prefix} dsm", family="llama", path=f"/{slug}", parent=base)
    run.save(update_fields=["produced_model"])
    imported = ImportJob.objects.create(project=project, kind="notes", corpus_name=corpus.name, file_name="z.jsonl")
    map_import = MapImportJob.objects.create(corpus=corpus, model_version=base, file_name="z.jsonl")
    PeakDecision.objects.create(
        note=note,
        task=task,
        model_version=base,
        method="lrp",
        template="t",
        start=0,
        end=4,
        decision="accept",
        reviewer=owner,
    )
    review_round = ReviewRound.objects.create(
        corpus=corpus,
        model_version=base,
        profile=profile,
        method="lrp",
        template="t",
        name=f"{prefix} round",
        k=1,
        created_by=owner,
    )
    added_span = AddedSpan.objects.create(note=note, task=task, start=0, end=4, reviewer=owner)
    erasure = ErasureRequest.objects.create(
        scope="notes",
        project=project,
        project_slug=slug,
        corpus_name=corpus.name,
        described=f"{prefix} erasure",
        target={"scope": "notes", "project_id": project.pk, "corpus_id": corpus.pk, "note_ids": [note.pk]},
        requested_by_name=owner.username,
    )
    deid_job = DeidJob.objects.create(
        action="deidentify", project=project, source=corpus, target_name=f"{prefix} corpus (de-identified)"
    )
    return {
        "corpus_id": corpus.pk,
        "note_id": note.pk,
        "task_id": task.pk,
        "corpus:job_id": imported.pk,
        "map_import_id": map_import.pk,
        "interchange:job_id": imported.pk,
        "pipeline:job_id": job.pk,
        "dataset_id": dataset.pk,
        "export_id": export.pk,
        "evaluation_id": evaluation.pk,
        "set_id": vset.pk,
        "round_id": review_round.pk,
        "run_id": run.pk,
        "split_id": split.pk,
        "erasure_id": erasure.pk,
        "deid:job_id": deid_job.pk,
        "span_id": added_span.pk,
        "fmt": "jsonl",
        "slug": project.slug,
        "membership_id": Membership.objects.get(project=project, user=owner).pk,
        "project": project,
        "owner": owner,
        "model": run.produced_model,
        "profile": profile,
    }


@pytest.fixture
def base_model(db):
    # A base model is shared by every project (its name is no secret); the model a project trained is its own.
    return ModelVersion.objects.create(name="shared base", family="llama", path="/nowhere")


@pytest.fixture
def other(db, django_user_model, base_model):
    """Project B with one of everything, made by B's own researcher (whose username is secret too)."""
    project = Project.objects.create(name=f"{SECRET} study", slug="zebra")
    owner = django_user_model.objects.create_user(username=f"{SECRET}-zed")
    Membership.objects.create(project=project, user=owner, role=Role.RESEARCHER)
    return _one_of_everything(project, owner, SECRET, base_model)


@pytest.fixture
def mine(db, django_user_model, base_model):
    """Project A (the default test project) with one of everything, made by its researcher."""
    from tests.projects import default_project, make_member

    owner = make_member(django_user_model.objects.create_user(username="a-owner"), Role.RESEARCHER)
    return _one_of_everything(default_project(), owner, "Own ward", base_model)


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
        MapImportJob,
        RelevanceJob,
        DatasetVersion,
        DatasetExport,
        RelevanceEvaluation,
        ValidationSet,
        LabeledSplit,
        TrainingRun,
        PeakDecision,
        ReviewRound,
        DeidJob,
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
    for route, name in named_routes():
        if route.startswith("admin/") or "<" in route or name in {"logout", "healthz"}:
            continue
        response = client.get(reverse(name))
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if SECRET.encode() in body:
            leaked.append(route)
    assert leaked == []


def _bodies(ids) -> list[dict]:
    """Forms and queries naming `ids`' objects under every field name the app's forms and pages
    take an object by (its id, or a model's name); `a` and `b` are models on the compare page and
    runs on the training diff, so both."""
    named = {
        "reviewer": ids["owner"].pk,
        "reviewers": [ids["owner"].pk],
        "task": ids["task_id"],
        "tasks": [ids["task_id"]],
        "model": ids["model"].pk,
        "model_version": ids["model"].pk,
        "peaks": ids["model"].name,
        "profile": ids["profile"].pk,
        "corpus": ids["corpus_id"],
        "split_corpus": ids["corpus_id"],
        "dataset": ids["dataset_id"],
        "split": ids["split_id"],
        "jobs": [ids["pipeline:job_id"]],
        "note": ids["note_id"],
        "round": ids["round_id"],
        "project": ids["project"].pk,
        "projects": [ids["project"].pk],
        "runs": [ids["run_id"]],
        "reference": ids["run_id"],
        "decision": "accept",
        "retired": "1",
        "action": "add",
        "format": "jsonl",
    }
    return [{**named, "a": ids["model"].pk, "b": ids["model"].pk}, {**named, "a": ids["run_id"], "b": ids["run_id"]}]


def _references(ids) -> dict:
    """How many rows anywhere refer to each of `ids`' objects (a form of project A that took one
    of B's would add one)."""
    from django.contrib.auth import get_user_model

    objects = [
        ids["project"],
        ids["owner"],
        ids["model"],
        ids["profile"],
        Corpus.objects.get(pk=ids["corpus_id"]),
        Note.objects.get(pk=ids["note_id"]),
        Task.objects.get(pk=ids["task_id"]),
        DatasetVersion.objects.get(pk=ids["dataset_id"]),
        RelevanceJob.objects.get(pk=ids["pipeline:job_id"]),
        LabeledSplit.objects.get(pk=ids["split_id"]),
        TrainingRun.objects.get(pk=ids["run_id"]),
        ReviewRound.objects.get(pk=ids["round_id"]),
    ]
    counts = {}
    for obj in objects:
        for rel in obj._meta.related_objects:
            if rel.related_model is get_user_model() or not hasattr(rel, "field"):
                continue
            counts[(type(obj).__name__, rel.get_accessor_name())] = rel.related_model._base_manager.filter(
                **{rel.field.name: obj}
            ).count()
    return counts


def _text(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode(errors="replace")


ROUTES = _object_patterns()
FORMS = [(r, name) for r, name in named_routes() if not r.startswith(("admin/", "api/")) and "<" not in r]


@pytest.fixture
def own_admin(django_user_model, mine):
    from tests.projects import make_member

    admin = make_member(django_user_model.objects.create_user(username="a-admin"), Role.ADMIN)
    # A reviewer changes only their own added spans (another's is a 404 even in the project), so
    # A's span is the admin's for the routes that edit and remove it.
    AddedSpan.objects.filter(pk=mine["span_id"]).update(reviewer=admin)
    return admin


@pytest.mark.parametrize("route, name", ROUTES + FORMS, ids=[name for _, name in ROUTES + FORMS])
def test_ids_of_another_project_in_a_form_of_ones_own_object_are_unknown(client, own_admin, mine, other, route, name):
    """The body dimension: project A's admin, on A's own object (or a page without one), sends
    B's ids in the query and the form. Nothing of B is named in the answer, nothing of B changes
    and no row comes to refer to B's objects."""
    if name in {"logout", "healthz", "login", "oidc_authentication_init", "oidc_authentication_callback"}:
        pytest.skip("not a page of the app's objects")
    client.force_login(own_admin)
    url = reverse(name, kwargs=_kwargs(route, name, mine)) if "<" in route else reverse(name)
    state, references = _state_of(other["project"]), _references(other)
    for body in _bodies(other):
        for how, response in (
            ("GET", client.get(url, body, follow=True)),
            ("htmx", client.get(url, body, headers={"HX-Request": "true"})),
            ("POST", client.post(url, body, follow=True)),  # the page it leads to shows its messages
        ):
            assert response.status_code < 500, (how, url)
            echoed = quote_plus(other["model"].name)  # the query a page links back to is the user's own
            assert SECRET not in _text(response).replace(echoed, ""), (how, url)
    assert _state_of(other["project"]) == state
    assert _references(other) == references


# Own objects a route refuses for a reason of their state, not of access (the positive control
# would otherwise fail for them): none yet.
REFUSED_BY_STATE: dict[str, str] = {}


@pytest.mark.parametrize("route, name", ROUTES, ids=[name for _, name in ROUTES])
def test_every_route_answers_for_ones_own_object(client, own_admin, mine, route, name):
    """The positive control: every URL the matrix above finds 404 for B's objects answers A's admin
    on A's own objects (a page 200, an action 302 or its refusal in words), so a route that 404s
    for everyone fails here."""
    client.force_login(own_admin)
    url = reverse(name, kwargs=_kwargs(route, name, mine))
    response = client.get(url)
    if response.status_code == 405:  # an action: posted, with A's own ids in its form
        response = client.post(url, _bodies(mine)[0])
        assert response.status_code in (200, 302, 400, 409), (url, response.status_code)
    else:
        assert response.status_code in (200, 302), (url, response.status_code)


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
