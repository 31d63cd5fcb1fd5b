"""Load the task catalog (`ml.catalog`) into Task rows: idempotent, all or nothing, audited.

Tasks made in the app (origin "app", webapp.corpus.tasks) are never overwritten: a catalog entry
with an app task's slug or description is skipped and reported as kept. A task's guideline and
retired flag belong to the app, so a load keeps them too."""

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Task


class CatalogConflict(Exception):
    """The catalog cannot be applied to the database as it stands; nothing was changed."""


@dataclass
class CatalogReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # entries skipped: an app-made task has their slug or description


def sync_catalog(specs, *, actor=None, source: str = "") -> CatalogReport:
    """Create or update one Task per spec (matched by slug). Tasks absent from the catalog stay.

    Refuses (CatalogConflict) an options change that would drop a label existing annotations use.
    """
    report = CatalogReport()
    try:
        with transaction.atomic():
            existing = {t.slug: t for t in Task.objects.select_for_update().filter(slug__in=[s.slug for s in specs])}
            app_descriptions = set(
                Task.objects.filter(origin=Task.Origin.APP, description__in=[s.description for s in specs]).values_list(
                    "description", flat=True
                )
            )
            for spec in specs:
                task = existing.get(spec.slug)
                if (task is not None and task.origin == Task.Origin.APP) or (
                    task is None and spec.description in app_descriptions
                ):
                    report.kept.append(spec.slug)
                    continue
                values = {
                    "description": spec.description,
                    "options": list(spec.options),
                    "group": spec.group,
                    "held_out": spec.held_out,
                    "aliases": list(spec.aliases),
                }
                if task is None:
                    Task.objects.create(slug=spec.slug, origin=Task.Origin.CATALOG, **values)
                    report.created.append(spec.slug)
                elif all(getattr(task, name) == value for name, value in values.items()):
                    report.unchanged.append(spec.slug)
                else:
                    _check_labels_kept(task, values["options"])
                    for name, value in values.items():
                        setattr(task, name, value)
                    task.save()
                    report.updated.append(spec.slug)
            record(
                actor,
                AuditEvent.Action.LOAD_CATALOG,
                None,
                file=source,
                created=len(report.created),
                updated=len(report.updated),
                unchanged=len(report.unchanged),
                kept=len(report.kept),
            )
    except IntegrityError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "integrity error"
        raise CatalogConflict(f"the database refused the catalog ({message}); nothing was changed") from exc
    return report


def _check_labels_kept(task: Task, options: list[str]) -> None:
    used = set(Annotation.objects.filter(task=task).exclude(label__in=options).values_list("label", flat=True))
    if used:
        dropped = ", ".join(sorted(repr(label) for label in used))
        raise CatalogConflict(f"task {task.slug!r}: the new options drop label(s) {dropped} that annotations use")
