"""Tasks made, edited and retired in the app (the Tasks page), audited.

Invariant: an edit never changes what a stored label means. Options that stored annotations use
can be neither removed nor renamed (a rename is a removal plus an addition); options may be added
or reordered, and the description, group, held-out flag and guideline edited (the audit row keeps
the old and new description). A catalog task's definition belongs to its catalog file
(webapp.corpus.catalog): in the app only its guideline changes. Retiring hides a task from new
work (`Task.objects.active()`) and keeps every row that refers to it; it can be brought back.

Guideline versions: each save that changes a task's guideline text (creating a task with one
included) records a TaskGuideline with the next version number (1, 2, ...); a save with the same
text records none. `current_guideline(task)` is what the review pages show and what a decision
records (PeakDecision.guideline_version); a cleared guideline is a version with empty text, and
shown as none.

A task made in the app belongs to a project (only its members see and use it); catalog tasks
belong to none and every project may use them.
"""

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Task, TaskGuideline

# The fields a task's definition is made of; only GUIDELINE_FIELDS change on a catalog task.
DEFINITION_FIELDS = ("description", "options", "group", "held_out")
GUIDELINE_FIELDS = ("guideline",)


class TaskEditRefused(Exception):
    """The edit would change the meaning of stored data; `problems` says what, nothing was saved."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class TaskUse:
    """What refers to a task: annotations per label, review decisions, relevance maps."""

    labels: dict[str, int]
    decisions: int
    maps: int

    @property
    def annotations(self) -> int:
        return sum(self.labels.values())


def manageable_tasks():
    """The tasks the Tasks page edits; the access layer (webapp.corpus.access.task_for) keeps a
    user to the catalog and their own projects' tasks."""
    return Task.objects.select_related("project")


def editable_fields(task: Task | None) -> tuple[str, ...]:
    if task is None or task.origin == Task.Origin.APP:
        return DEFINITION_FIELDS + GUIDELINE_FIELDS
    return GUIDELINE_FIELDS


def use_of(task: Task) -> TaskUse:
    labels = dict(Annotation.objects.filter(task=task).order_by().values_list("label").annotate(n=Count("id")))
    return TaskUse(labels=labels, decisions=task.peak_decisions.count(), maps=task.relevance_maps.count())


def dropped_label_problems(task: Task, options: list[str]) -> list[str]:
    """One problem per option that stored annotations use and `options` no longer holds."""
    used = use_of(task).labels
    return [
        f"option {label!r} is used by {n} stored annotation{'s' if n != 1 else ''}: "
        "it cannot be removed or renamed (add a new option instead)"
        for label, n in sorted(used.items())
        if label not in options
    ]


def create_task(
    *, project, slug, description, options, group="", held_out=False, guideline="", actor=None, ip=None
) -> Task:
    with transaction.atomic():
        task = Task(
            project=project,
            slug=slug,
            description=description,
            options=list(options),
            group=group,
            held_out=held_out,
            guideline=guideline,
            origin=Task.Origin.APP,
        )
        task.full_clean()
        task.save()
        if guideline:
            _record_guideline(task, actor)
        record(
            actor, AuditEvent.Action.CREATE_TASK, task, ip=ip, slug=slug, description=description, options=len(options)
        )
    return task


def edit_task(task: Task, values: dict, *, actor=None, ip=None) -> list[str]:
    """Apply `values` (field name -> value) within the task's editable fields; return the names of
    the fields changed (none: nothing saved, nothing audited). Raises TaskEditRefused."""
    allowed = editable_fields(task)
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        changed = [name for name in allowed if name in values and getattr(task, name) != values[name]]
        if not changed:
            return []
        if "options" in changed:
            problems = dropped_label_problems(task, values["options"])
            if problems:
                raise TaskEditRefused(problems)
        details = {"slug": task.slug, "changed": changed}
        if "description" in changed:
            details["description"] = {"old": task.description, "new": values["description"]}
        if "options" in changed:
            details["options_added"] = [o for o in values["options"] if o not in task.options]
        for name in changed:
            setattr(task, name, values[name])
        task.full_clean()
        task.save()
        if "guideline" in changed:
            details["guideline_version"] = _record_guideline(task, actor).version
        record(actor, AuditEvent.Action.EDIT_TASK, task, ip=ip, **details)
    return changed


def current_guideline(task) -> TaskGuideline | None:
    """The task's latest guideline version, or None when it has no guideline (never had one, or
    its latest version is empty)."""
    latest = TaskGuideline.objects.filter(task=task).order_by("-version").first()
    return latest if latest is not None and latest.text.strip() else None


def _record_guideline(task: Task, actor) -> TaskGuideline:
    """A new version holding the task's guideline text (the caller holds the task's row lock)."""
    last = TaskGuideline.objects.filter(task=task).order_by("-version").values_list("version", flat=True).first()
    author = actor if getattr(actor, "is_authenticated", False) else None
    return TaskGuideline.objects.create(task=task, version=(last or 0) + 1, text=task.guideline, author=author)


def set_retired(task: Task, retired: bool, *, actor=None, ip=None) -> bool:
    """Retire (or bring back) the task; False if it already was so (nothing recorded)."""
    with transaction.atomic():
        if not Task.objects.filter(pk=task.pk, retired=not retired).update(retired=retired):
            return False
        task.retired = retired
        action = AuditEvent.Action.RETIRE_TASK if retired else AuditEvent.Action.RESTORE_TASK
        record(actor, action, task, ip=ip, slug=task.slug)
    return True
