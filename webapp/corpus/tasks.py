"""Tasks made, edited and retired in the app (the Tasks page), audited.

Invariant: an edit never changes what a stored label means. Options that stored annotations use
can be neither removed nor renamed (a rename is a removal plus an addition); options may be added
or reordered, and the description, group, held-out flag and guideline edited (the audit row keeps
the old and new description). A catalog task's definition belongs to its catalog file
(webapp.corpus.catalog): in the app only its guideline changes. Retiring hides a task from new
work (`Task.objects.active(project_id)`) and keeps every row that refers to it; it can be brought back.

Guideline versions: each save that changes a task's guideline text (creating a task with one
included) records a TaskGuideline with the next version number (1, 2, ...); a save with the same
text records none. `current_guideline(task, project)` is what the review pages show and what a decision
records (PeakDecision.guideline_version); a cleared guideline is a version with empty text, and
shown as none.

A task made in the app belongs to a project (only its members see and use it); catalog tasks
belong to none and every project may use them. The catalog itself (a catalog task's guideline and
retired flag) is changed by site admins only; a project that adopts a catalog task retires it for
itself (`set_retired(..., project=)`, a ProjectTaskState) and writes its own guideline versions
(`write_project_guideline`), which its reviewers read instead of the catalog's
(`current_guideline(task, project)`); no other project sees either.
"""

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, F, Q

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, ProjectTaskState, Task, TaskGuideline

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


def use_of(task: Task, project=None) -> TaskUse:
    """What refers to the task; with `project`, in that project's corpora only (a catalog task's use
    elsewhere is no concern of one project's researchers)."""
    mine = {"note__corpus__project_id": getattr(project, "pk", project)} if project is not None else {}
    annotations = Annotation.objects.filter(task=task, **mine)
    labels = dict(annotations.order_by().values_list("label").annotate(n=Count("id")))
    decisions = task.peak_decisions.filter(**mine).count()
    return TaskUse(labels=labels, decisions=decisions, maps=task.relevance_maps.filter(**mine).count())


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


def current_guideline(task, project=None) -> TaskGuideline | None:
    """The guideline version reviewers of `project` (a Project or its id; None: the task's own)
    read: for a catalog task the project's latest version when it wrote one, else the catalog's;
    None when that is empty (cleared) or there is none."""
    project_id = getattr(project, "pk", project)
    if project_id is not None and task.project_id is None:  # one query: the project's series first
        series = Q(project_id=project_id) | Q(project__isnull=True)
        versions = TaskGuideline.objects.filter(series, task=task).order_by(F("project").asc(nulls_last=True))
    else:
        versions = TaskGuideline.objects.filter(task=task, project__isnull=True)
    latest = versions.order_by(*versions.query.order_by, "-version").first()
    return latest if latest is not None and latest.text.strip() else None


def guideline_versions_for(task, project=None):
    """The versions a page of `project` may name: the task's own (the catalog's) and the project's."""
    project_id = getattr(project, "pk", project)
    own = TaskGuideline.objects.filter(task=task, project__isnull=True)
    return own | TaskGuideline.objects.filter(task=task, project_id=project_id) if project_id else own


def _record_guideline(task: Task, actor, *, text: str | None = None, project=None) -> TaskGuideline:
    """A new version holding `text` (default: the task's guideline), numbered after every version of
    the task (the caller holds the task's row lock)."""
    last = TaskGuideline.objects.filter(task=task).order_by("-version").values_list("version", flat=True).first()
    author = actor if getattr(actor, "is_authenticated", False) else None
    return TaskGuideline.objects.create(
        task=task,
        version=(last or 0) + 1,
        text=task.guideline if text is None else text,
        author=author,
        project_id=getattr(project, "pk", project),
    )


def write_project_guideline(task: Task, project, text: str, *, actor=None, ip=None) -> TaskGuideline | None:
    """`project`'s own guideline of the catalog task `task`: a new version of the project's series
    when the text differs from what its reviewers read now; None when it does not (nothing saved)."""
    if task.project_id is not None:
        raise ValueError("a project's own task has one guideline: edit the task")
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        current = current_guideline(task, project)
        if (current.text if current else "") == text:
            return None
        version = _record_guideline(task, actor, text=text, project=project)
        record(actor, AuditEvent.Action.EDIT_TASK, version, ip=ip, slug=task.slug, changed=["guideline"],
               guideline_version=version.version)  # fmt: skip
    return version


def set_retired(task: Task, retired: bool, *, actor=None, ip=None, project=None) -> bool:
    """Retire (or bring back) the task; with `project`, a catalog task in that project only. False
    if it already was so (nothing recorded)."""
    if project is not None:
        return _set_retired_in(task, retired, project, actor=actor, ip=ip)
    with transaction.atomic():
        if not Task.objects.filter(pk=task.pk, retired=not retired).update(retired=retired):
            return False
        task.retired = retired
        action = AuditEvent.Action.RETIRE_TASK if retired else AuditEvent.Action.RESTORE_TASK
        record(actor, action, task, ip=ip, slug=task.slug)
    return True


def _set_retired_in(task: Task, retired: bool, project, *, actor, ip) -> bool:
    if task.project_id is not None:
        raise ValueError("a project's own task is retired for its project: retire the task")
    with transaction.atomic():
        state, _ = ProjectTaskState.objects.select_for_update().get_or_create(
            project_id=getattr(project, "pk", project), task=task
        )
        if state.retired == retired:
            return False
        state.retired = retired
        state.save(update_fields=["retired"])
        action = AuditEvent.Action.RETIRE_TASK if retired else AuditEvent.Action.RESTORE_TASK
        record(actor, action, state, ip=ip, slug=task.slug)
    return True


def retired_in(tasks, project_ids) -> dict[int, set[int]]:
    """{task id: ids of the projects among `project_ids` (None: any) that retired it for themselves}."""
    states = ProjectTaskState.objects.filter(task__in=tasks, retired=True)
    if project_ids is not None:
        states = states.filter(project_id__in=project_ids)
    found: dict[int, set[int]] = {}
    for task_id, project_id in states.values_list("task_id", "project_id"):
        found.setdefault(task_id, set()).add(project_id)
    return found
