"""A relevance job with no tasks chosen draws from the catalog and the corpus's own project's
tasks, never from another project's; the launch form counts only the tasks the user may see."""

from django.urls import reverse

from tests.webapp.pipeline.factories import spec
from webapp.corpus.models import Task
from webapp.projects.models import Project


def _own_task(project, slug):
    return Task.objects.create(project=project, slug=slug, description=slug.replace("-", " "), options=["y", "n"])


def test_the_pool_is_the_catalogs_and_the_corpuss_projects_tasks(corpus, tasks, model_version):
    theirs = _own_task(Project.objects.create(name="Oncology", slug="onco"), "oncologia-only")
    ours = _own_task(corpus.project, "ward-only")
    for selection in ("all", "sample"):
        pool = spec(corpus, model_version, task_selection=selection, tasks=[]).task_pool()
        assert theirs not in pool and ours in pool and set(tasks) <= set(pool)


def test_the_launch_form_counts_the_tasks_the_user_may_see(client, researcher, corpus, tasks):
    _own_task(Project.objects.create(name="Oncology", slug="onco"), "oncologia-only")
    client.force_login(researcher)
    html = client.get(reverse("pipeline:job_launch")).content.decode()
    assert f"the {len(tasks)} tasks of the catalog and your projects" in html
    assert "oncologia-only" not in html
