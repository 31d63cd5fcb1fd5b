"""What a review page's selection chooses from, kept by each process for a few seconds: model
versions, tasks, peak profiles, and a corpus's relevance jobs' templates and configurations.

Model versions, tasks and peak profiles are kept per project (the corpus's): a page of project A
offers base models, catalog tasks, shared profiles and A's own, never B's trained models, tasks or
profiles, whoever looks; a lookup by id of B's row answers None, as an unknown id does
(webapp.projects.scoping `of_project`).

Every review request asked the database for these (seven queries for the queue, four for a
note), and they change seldom. A process keeps what it read for settings.REVIEW_CATALOG_SECONDS
(default 10; 0 turns the copy off). Invalidation:
- a change saved or deleted in this process (a model version, task, profile, relevance job or
  evaluation: `clear` on their post_save/post_delete) clears its copy at once;
- other processes (the other gunicorn workers, a training worker registering a model version, a
  command creating a job) show it once their copy is older than those seconds;
- a lookup by id that misses the copy asks the database, so a page that names a new model
  version, task or profile in its query shows it at once.
What a page acts on (the note, its maps, peaks and decisions, the reviewer's roles and the
guideline) is always read fresh: only the menus and their defaults can be seconds old.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from ml.relevance import RelevanceConfig, default_config_key
from webapp.corpus.models import Task
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob

T = TypeVar("T")
_kept: dict[tuple, tuple[float, object]] = {}  # key -> (monotonic time it expires, value)
_lock = threading.Lock()  # gthread workers: one thread reads while another stores


def remembered(key: tuple, read: Callable[[], T]) -> T:
    """`read()`, or what it returned for `key` less than REVIEW_CATALOG_SECONDS ago."""
    seconds = settings.REVIEW_CATALOG_SECONDS
    if seconds <= 0:
        return read()
    now = time.monotonic()
    with _lock:
        kept = _kept.get(key)
    if kept is not None and kept[0] > now:
        return kept[1]
    value = read()
    with _lock:
        _kept[key] = (now + seconds, value)
    return value


def clear(*_args, **_kwargs) -> None:
    """Forget every kept value (a signal receiver: any arguments)."""
    with _lock:
        _kept.clear()


def model_versions(project_id: int) -> list[ModelVersion]:
    """The model versions a page of the project offers: base models and the project's own."""
    return remembered(
        ("models", project_id), lambda: list(ModelVersion.objects.of_project(project_id).order_by("name"))
    )


def model_version(pk: int | None, project_id: int) -> ModelVersion | None:
    """The model version `pk` if the project may use it; None otherwise, as for an unknown id."""
    if pk is None:
        return None
    found = next((m for m in model_versions(project_id) if m.pk == pk), None)
    return found if found is not None else ModelVersion.objects.of_project(project_id).filter(pk=pk).first()


def active_tasks(project_id: int) -> list[Task]:
    """The tasks a page of the project offers: the catalog's and the project's own, not retired."""
    return remembered(
        ("tasks", project_id), lambda: list(Task.objects.of_project(project_id).active(project_id).order_by("slug"))
    )


def task(pk: int | None, project_id: int) -> Task | None:
    """The task `pk` of the project or the catalog, active or retired; None when there is none (or
    it is another project's)."""
    if pk is None:
        return None
    found = next((t for t in active_tasks(project_id) if t.pk == pk), None)
    return found if found is not None else Task.objects.of_project(project_id).filter(pk=pk).first()


def retired_tasks(project_id: int) -> frozenset[int]:
    """Ids of the catalog tasks the project retired for itself (corpus.ProjectTaskState)."""
    from webapp.corpus.models import ProjectTaskState

    return remembered(
        ("retired", project_id),
        lambda: frozenset(
            ProjectTaskState.objects.filter(project_id=project_id, retired=True).values_list("task_id", flat=True)
        ),
    )


def tasks(pks, project_id: int) -> list[Task]:
    """The tasks of `pks` the project may see, by slug (retired ones included)."""
    wanted = set(pks)
    found = [t for t in active_tasks(project_id) if t.pk in wanted]
    missing = wanted - {t.pk for t in found}
    if missing:
        found += list(Task.objects.of_project(project_id).filter(pk__in=missing))
    return sorted(found, key=lambda t: t.slug)


def profiles(project_id: int) -> dict[int, PeakProfile]:
    """The peak profiles a page of the project offers: the shared ones and the project's own."""
    return remembered(("profiles", project_id), lambda: {p.pk: p for p in PeakProfile.objects.of_project(project_id)})


def profile(pk: int, project_id: int) -> PeakProfile | None:
    """The profile `pk` if the project may use it; None otherwise, as for an unknown id."""
    found = profiles(project_id).get(pk)
    return found if found is not None else PeakProfile.objects.of_project(project_id).filter(pk=pk).first()


def default_profile(project_id: int) -> PeakProfile | None:
    """The profile marked default, else the project's latest (as selection.default_profile)."""
    kept = list(profiles(project_id).values())
    marked = [p for p in kept if p.is_default]
    if marked:
        return min(marked, key=lambda p: p.pk)
    return max(kept, key=lambda p: (p.created, p.pk)) if kept else None


def corpus_templates(corpus_id: int) -> list[str]:
    """The templates of the corpus's latest 20 relevance jobs, the latest first, each once."""

    def read():
        latest = RelevanceJob.objects.filter(corpus_id=corpus_id).order_by("-created")
        return list(dict.fromkeys(latest.values_list("template", flat=True)[:20]))

    return remembered(("templates", corpus_id), read)


def corpus_config_keys(corpus_id: int, method: str, template: str) -> list[str]:
    """Configuration keys of a corpus's relevance jobs and evaluations for the method and template,
    the latest job's first; the default configuration's when there are none."""
    return list(remembered(("configs", corpus_id, method, template), lambda: _config_keys(corpus_id, method, template)))


def _config_keys(corpus_id: int, method: str, template: str) -> list[str]:
    from webapp.evaluation.models import RelevanceEvaluation

    keys = list(
        RelevanceJob.objects.filter(corpus_id=corpus_id, method=method, template=template)
        .order_by("-created")
        .values_list("config_key", flat=True)[:50]
    )
    for configs in (
        RelevanceEvaluation.objects.filter(corpus_id=corpus_id)
        .order_by("-created")
        .values_list("configs", flat=True)[:20]
    ):
        for values in configs or ():
            try:
                config = RelevanceConfig.from_dict(values)
            except (TypeError, ValueError):
                continue
            if (config.method, config.template) == (method, template):
                keys.append(config.key)
    return list(dict.fromkeys(k for k in keys if k)) or [default_config_key(method, template)]


def stored_configs(keys) -> dict[str, dict]:
    """{key: the configuration a relevance job stored under it} for those of `keys` a job has."""
    keys = tuple(sorted(set(keys)))

    def read():
        stored: dict[str, dict] = {}
        for key, config in RelevanceJob.objects.filter(config_key__in=keys).values_list("config_key", "config"):
            stored.setdefault(key, config)
        return stored

    return remembered(("stored-configs", keys), read)
