"""webapp.review.catalog: the review menus a process keeps for REVIEW_CATALOG_SECONDS. A change
saved in this process shows at once, one written elsewhere once the copy is older than those
seconds, and a lookup by id never misses a row the database has."""

import pytest

from tests.projects import default_project
from webapp.corpus.models import Task
from webapp.pipeline.models import ModelVersion, PeakProfile
from webapp.review import catalog, selection


@pytest.fixture
def clock(monkeypatch):
    """The catalog's clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(catalog.time, "monotonic", lambda: now[0])
    return now


@pytest.fixture
def kept(settings):
    settings.REVIEW_CATALOG_SECONDS = 10


def names(models):
    return [m.name for m in models]


def test_the_menus_are_read_once_then_kept(kept, corpus, base, sharp, django_assert_num_queries):
    selection.for_corpus(corpus, {})
    with django_assert_num_queries(0):
        sel = selection.for_corpus(corpus, {"model": base.pk, "profile": sharp.pk})
    assert (sel.model, sel.profile, sel.method, sel.template) == (base, sharp, "attnlrp", "en")


def test_a_change_saved_in_this_process_shows_at_once(kept, corpus, base):
    assert "another-model" not in names(selection.for_corpus(corpus, {}).models)
    ModelVersion.objects.create(name="another-model", family="llama", path="another")
    assert "another-model" in names(selection.for_corpus(corpus, {}).models)


def test_a_change_from_another_process_shows_once_the_copy_is_old(kept, clock, corpus, base):
    before = names(catalog.model_versions(corpus.project_id))
    # bulk_create sends no signal: as a training worker's registration looks from here
    ModelVersion.objects.bulk_create([ModelVersion(name="worker-made", family="llama", path="w")])
    clock[0] += 9.9
    assert names(catalog.model_versions(corpus.project_id)) == before
    clock[0] += 0.2
    assert names(catalog.model_versions(corpus.project_id)) == sorted(before + ["worker-made"])


def test_a_lookup_by_id_asks_the_database_when_the_copy_lacks_the_row(kept, corpus, tasks, sharp):
    catalog.active_tasks(corpus.project_id), catalog.profiles(corpus.project_id)  # kept: without the rows below
    [task] = Task.objects.bulk_create([Task(slug="made-elsewhere", description="made elsewhere", options=["y"])])
    [profile] = PeakProfile.objects.bulk_create([PeakProfile(name="elsewhere", version=1)])
    sel = selection.for_corpus(corpus, {"task": task.pk, "profile": profile.pk})
    assert (sel.task.slug, sel.profile.name, sel.errors) == ("made-elsewhere", "elsewhere", [])
    assert "made-elsewhere" not in [t.slug for t in sel.tasks]  # the menu itself is seconds old


def test_a_retired_task_is_not_offered_but_still_found(kept, corpus, tasks):
    tasks["heart"].retired = True
    tasks["heart"].save()
    assert [t.slug for t in catalog.active_tasks(corpus.project_id)] == ["presence-of-pacemaker"]
    assert catalog.task(tasks["heart"].pk, corpus.project_id) == tasks["heart"]


def test_zero_seconds_reads_every_time(settings, corpus, base, django_assert_num_queries):
    settings.REVIEW_CATALOG_SECONDS = 0
    selection.for_corpus(corpus, {})
    # models, templates, configuration keys (2), tasks, profiles; not the jobs' configurations once
    # each key's label is known (selection.config_choices keeps a key's label: a key never changes)
    with django_assert_num_queries(6):
        selection.for_corpus(corpus, {})


def test_the_default_profile_is_the_marked_one_else_the_latest(kept, db):
    project = default_project().pk
    marked = PeakProfile.objects.get(is_default=True)  # the paper's, made by a migration
    PeakProfile.objects.create(name="first", version=1)
    latest = PeakProfile.objects.create(name="latest", version=1)
    assert catalog.default_profile(project) == marked == selection.default_profile(project)
    marked.is_default = False
    marked.save()
    assert catalog.default_profile(project) == latest == selection.default_profile(project)
