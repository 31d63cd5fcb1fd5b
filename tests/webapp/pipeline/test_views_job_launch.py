import pytest
from django.urls import reverse

from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.pipeline import planning
from webapp.pipeline.models import ModelVersion, RelevanceJob

URL = "/jobs/new/"


@pytest.fixture
def form_data(corpus, tasks, model_version):
    return {
        "corpus": corpus.pk,
        "task_selection": "sample",
        "sample_k": 2,
        "seed": 0,
        "model_version": model_version.pk,
        "method": "attnlrp",
        "template_choice": "en",
        "chunk_size": 8,
    }


def test_the_url_is_stable():
    assert reverse("pipeline:job_launch") == URL


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_a_researcher_or_admin_launches_a_job_and_lands_on_its_page(client, request, form_data, role):
    user = request.getfixturevalue(role)
    client.force_login(user)
    response = client.post(URL, form_data)
    job = RelevanceJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("pipeline:job_detail", args=[job.pk])
    assert (job.status, job.chunks.count(), job.sample_k, job.created_by) == ("planning", 0, 2, user)
    planning.plan_now(job)  # as the planner will: the request did not plan
    assert (job.total, job.chunks.count()) == (12, 2)
    assert AuditEvent.objects.filter(action=AuditEvent.Action.LAUNCH_JOB, actor=user).exists()


def test_the_form_launches_a_contrastive_job_with_its_neutral_text(client, researcher, form_data):
    from ml.relevance import RelevanceConfig

    client.force_login(researcher)
    response = client.post(
        URL,
        {**form_data, "template_choice": "es", "explain": "contrastive", "neutral": "la persona", "normalise": "clip"},
    )
    job = RelevanceJob.objects.get()
    assert response.status_code == 302
    expected = RelevanceConfig(explain="contrastive", template="es", neutral="la persona", normalise="clip")
    assert job.relevance_config == expected and job.config_key == expected.key
    page = client.get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    assert "s_T minus a neutral description" in page and "la persona" in page and expected.key in page


def test_the_form_keeps_the_neutral_text_for_contrastive_only(client, researcher, form_data):
    client.force_login(researcher)
    client.post(URL, {**form_data, "explain": "span", "neutral": "the patient"})
    job = RelevanceJob.objects.get()
    assert (job.explain, job.relevance_config.neutral) == ("span", "")


def test_a_form_without_explain_launches_the_reference_codes_variant(client, researcher, form_data):
    from ml.relevance import RelevanceConfig

    client.force_login(researcher)
    client.post(URL, form_data)
    assert RelevanceJob.objects.get().config_key == RelevanceConfig().key


def test_the_form_offers_the_default_model_first(client, researcher, db):
    default = ModelVersion.objects.filter(is_default=True).first() or ModelVersion.objects.create(
        name="smol", family="llama", path="smollm2-135m-instruct", is_default=True
    )
    client.force_login(researcher)
    response = client.get(URL)
    assert response.status_code == 200
    assert response.context["form"]["model_version"].initial == default.pk


@pytest.mark.parametrize("user_fixture", ["clinician", "norole_user"])
def test_others_may_not_launch(client, request, form_data, user_fixture):
    client.force_login(request.getfixturevalue(user_fixture))
    assert client.get(URL).status_code == 403
    assert client.post(URL, form_data).status_code == 403
    assert not RelevanceJob.objects.exists()


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"sample_k": 9}, "sample_k", "k must be between 1 and 4"),
        ({"sample_k": 0}, "sample_k", "k must be between 1 and 4"),
        ({"template_choice": "custom", "custom_template": "{note} heart"}, "custom_template", "{note} and {task}"),
        ({"template_choice": "custom", "custom_template": ""}, "custom_template", "Write the custom template"),
        ({"template_choice": "custom", "custom_template": "{task} then {note}"}, "custom_template", "after {note}"),
        ({"chunk_size": 0}, "chunk_size", "greater than or equal to 1"),
        ({"chunk_size": 100000}, "chunk_size", "less than or equal to 5000"),
        ({"corpus": 999999}, "corpus", "Select a valid choice"),
        ({"tasks": [999999]}, "tasks", "Select a valid choice"),
        ({"task_selection": "list"}, "tasks", "Choose at least one task"),
        ({"external_ids": "n001, nope, n002\nzzz"}, "external_ids", "has no note nope, zzz"),
        ({"explain": "everything"}, "explain", "Select a valid choice"),
        (
            {"explain": "contrastive", "template_choice": "custom", "custom_template": "Note: {note}. Finding: {task}"},
            "neutral",
            "needs a neutral description",
        ),
    ],
)
def test_the_form_explains_what_is_wrong(client, researcher, form_data, changes, field, words):
    client.force_login(researcher)
    response = client.post(URL, {**form_data, **changes})
    assert response.status_code == 200
    errors = " ".join(response.context["form"].errors.get(field, []))
    assert words in errors, response.context["form"].errors
    assert words.split("{")[0] in response.content.decode().replace("&#x27;", "'")
    assert not RelevanceJob.objects.exists()


def test_an_empty_corpus_is_refused(client, researcher, form_data):
    from webapp.corpus.models import Corpus

    empty = Corpus.objects.create(project=default_project(), name="empty", language="en")
    client.force_login(researcher)
    response = client.post(URL, {**form_data, "corpus": empty.pk})
    assert "No note of corpus empty matches" in response.content.decode()
    assert not RelevanceJob.objects.exists()


def test_a_custom_template_and_a_note_selection_are_kept(client, researcher, form_data):
    client.force_login(researcher)
    client.post(
        URL,
        {
            **form_data,
            "template_choice": "custom",
            "custom_template": "{note} Seen: {task}",
            "external_ids": "n001 n003",
            "limit": 5,
        },
    )
    job = RelevanceJob.objects.get()
    assert job.template == "{note} Seen: {task}"
    assert job.note_filter == {"external_ids": ["n001", "n003"], "limit": 5}
    planning.plan_now(job)
    assert job.total == 4


def test_the_form_launches_a_job_in_an_explicit_precision(client, researcher, form_data):
    from ml.relevance import RelevanceConfig

    client.force_login(researcher)
    client.post(URL, {**form_data, "method": "grad_input", "dtype": "float32"})
    job = RelevanceJob.objects.get()
    assert job.relevance_config == RelevanceConfig(method="grad_input", dtype="float32")
    assert job.config_key != RelevanceConfig(method="grad_input").key  # float32 maps never mix with auto ones


def test_the_k_help_counts_the_tasks_of_the_catalog_and_a_note_link_preselects(client, researcher, tasks, corpus):
    from webapp.corpus.models import Task

    client.force_login(researcher)
    task = Task.objects.order_by("pk").first()
    response = client.get(reverse("pipeline:job_launch"), {"external_ids": "n1", "tasks": [task.pk]})
    html = response.content.decode()
    assert f"the {Task.objects.count()} tasks of the catalog and your projects" in html and "136 tasks" not in html
    form = response.context["form"]
    assert form.initial["external_ids"] == "n1" and form.initial["task_selection"] == "list"
    assert form.initial["tasks"] == [str(task.pk)]


@pytest.mark.parametrize(
    ("seed", "message"),
    [("-1", "greater than or equal to 0"), (str(10**30), "less than or equal to 2147483647")],
)
def test_a_seed_outside_what_is_stored_is_refused_beside_its_field(client, researcher, form_data, seed, message):
    client.force_login(researcher)
    response = client.post(URL, {**form_data, "seed": seed})
    assert response.status_code == 200 and not RelevanceJob.objects.exists()
    assert message in " ".join(response.context["form"].errors["seed"])


def test_the_launch_is_audited_with_the_clients_address(client, researcher, form_data):
    client.force_login(researcher)
    client.post(URL, form_data, REMOTE_ADDR="203.0.113.7")
    job = RelevanceJob.objects.get()
    event = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB, object_id=str(job.pk))
    assert event.ip == "203.0.113.7"
