"""Corpus pages: browse corpora and notes, the tasks (made, edited and retired here:
webapp.corpus.tasks), and imports (uploaded files run as
background import jobs, webapp.corpus.import_jobs; their page polls until the job ends)."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.audit.client_ip import client_address
from webapp.corpus import import_jobs, problem_text, search, tasks
from webapp.corpus.access import (
    ProjectNotChosen,
    adopting_project,
    changes_the_catalog,
    corpus_for,
    import_job_for,
    note_for,
    task_for,
)
from webapp.corpus.browse import NOTES_PER_PAGE, note_page
from webapp.corpus.forms import UploadForm
from webapp.corpus.gold import PREVIEW_ONLY
from webapp.corpus.models import Corpus
from webapp.corpus.stats import corpus_summaries, task_summaries
from webapp.corpus.task_forms import TaskForm
from webapp.lib import windows
from webapp.lib.problems import MAX_PROBLEMS as PROBLEMS_PER_PAGE
from webapp.lifecycle.status import JobStatus
from webapp.projects.models import Project
from webapp.projects.roles import Capability, capability_required, is_site_admin, projects_with, require

RECENT_ON_UPLOAD_PAGE = 5


@capability_required(Capability.VIEW)
def corpus_list(request):
    context = {"nav": "corpora", "corpora": corpus_summaries(request.user)}
    return render(request, "corpus/corpus_list.html", context)


def corpus_detail(request, corpus_id):
    corpus = corpus_for(request.user, corpus_id)
    page = note_page(corpus, after=request.GET.get("after"), query=request.GET.get("q", ""))
    template = "corpus/corpus_detail.html#note-rows" if request.htmx else "corpus/corpus_detail.html"
    context = {"corpus": corpus, "page": page, "per_page": NOTES_PER_PAGE, "search_help": search.help_text()}
    return render(request, template, {"nav": "corpora", **context})


def note_detail(request, corpus_id, note_id):
    """One window of the note's text at a time (webapp.lib.windows), so a long note's page
    stays small; ?window=K moves through it."""
    note = note_for(request.user, corpus_id, note_id)
    window = windows.pick(windows.windows(note.text), request.GET.get("window"))
    annotations = note.annotations.select_related("task").order_by("task__slug", "annotator_name")
    return render(
        request,
        "corpus/note_detail.html",
        {
            "nav": "corpora",
            "note": note,
            "annotations": annotations,
            "window": window,
            "window_text": note.text[window.start : window.end],
            "n_chars": len(note.text),
        },
    )


@capability_required(Capability.VIEW)
def task_list(request):
    rows = task_summaries(request.user)
    managed = list(Project.objects.where(request.user, Capability.MANAGE_TASKS).order_by("name"))
    retired = tasks.retired_in([row.task for row in rows], projects_with(request.user, Capability.VIEW))
    for row in rows:  # a catalog task's state in each project where the user manages tasks
        here = retired.get(row.task.pk, set())
        row.retired_in = [p for p in managed if p.pk in here]
        row.states = [(p, p.pk in here) for p in managed] if row.task.project_id is None else []
    context = {"nav": "tasks", "tasks": rows, "site_admin": is_site_admin(request.user)}
    return render(request, "corpus/task_list.html", context)


def task_new(request):
    require(request.user, Capability.MANAGE_TASKS)
    form = TaskForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        task = tasks.create_task(**form.cleaned_data, actor=request.user, ip=client_address(request))
        messages.success(request, _("Task %(task)s created.") % {"task": task.slug})
        return redirect("corpus:tasks")
    return render(request, "corpus/task_form.html", {"nav": "tasks", "form": form, "task": None})


def task_edit(request, task_id):
    task = task_for(request.user, task_id)
    chosen = request.POST.get("project") or request.GET.get("project")
    if task.project_id is None and not changes_the_catalog(request.user, task, chosen):
        return _catalog_guideline_edit(request, task, chosen)
    form = TaskForm(request.POST or None, task=task, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            changed = tasks.edit_task(task, form.cleaned_data, actor=request.user, ip=client_address(request))
        except tasks.TaskEditRefused as refused:
            for problem in refused.problems:
                form.add_error("options", _("Not saved: %(problem)s.") % {"problem": problem})
        else:
            saved = (
                _("Task %(task)s: %(fields)s saved.") % {"task": task.slug, "fields": ", ".join(changed)}
                if changed
                else _("Nothing changed.")
            )
            messages.success(request, saved)
            return redirect("corpus:tasks")
    context = {"nav": "tasks", "form": form, "task": task, "use": tasks.use_of(task)}
    return render(request, "corpus/task_form.html", context)


def _catalog_guideline_edit(request, task, chosen):
    """A project's own guideline of a catalog task: only the guideline, for the chosen project."""
    try:
        project = adopting_project(request.user, chosen)
    except ProjectNotChosen as exc:
        messages.error(request, str(exc))
        return redirect("corpus:tasks")
    form = TaskForm(request.POST or None, task=task, user=request.user)
    current = tasks.current_guideline(task, project)
    form.initial["guideline"] = current.text if current else ""
    if request.method == "POST" and form.is_valid():
        text, ip = form.cleaned_data["guideline"], client_address(request)
        saved = tasks.write_project_guideline(task, project, text, actor=request.user, ip=ip)
        messages.success(
            request,
            _("Task %(task)s: guideline for %(project)s saved.") % {"task": task.slug, "project": project.name}
            if saved
            else _("Nothing changed."),
        )
        return redirect("corpus:tasks")
    context = {"nav": "tasks", "form": form, "task": task, "use": tasks.use_of(task, project), "for_project": project}
    return render(request, "corpus/task_form.html", context)


@require_POST
def task_retire(request, task_id):
    task = task_for(request.user, task_id)
    retire = request.POST.get("retired") == "1"
    chosen = request.POST.get("project")
    project = None
    if task.project_id is None and not changes_the_catalog(request.user, task, chosen):
        try:
            project = adopting_project(request.user, chosen)  # a catalog task: for this project only
        except ProjectNotChosen as exc:
            messages.error(request, str(exc))
            return redirect("corpus:tasks")
    if tasks.set_retired(task, retire, actor=request.user, ip=client_address(request), project=project):
        names = {"task": task.slug, "project": project.name if project else ""}
        if retire and project:
            done = _("Task %(task)s retired: hidden from new jobs and the review queue, its data kept in %(project)s.")
        elif retire:
            done = _("Task %(task)s retired: hidden from new jobs and the review queue, its data kept.")
        elif project:
            done = _("Task %(task)s back in use in %(project)s.")
        else:
            done = _("Task %(task)s back in use.")
        messages.success(request, done % names)
    return redirect("corpus:tasks")


def upload(request):
    require(request.user, Capability.IMPORT)
    form = UploadForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        job = form.launch(request.user, ip=client_address(request))
        messages.info(
            request,
            _(
                "%(file)s is queued for import into %(corpus)s; "
                "this page follows it (you can leave it, the import goes on)."
            )
            % {"file": job.file_name, "corpus": job.corpus_name},
        )
        return redirect("corpus:import_detail", job.pk)
    recent = import_jobs.recent(request.user)[:RECENT_ON_UPLOAD_PAGE]
    return render(request, "corpus/upload.html", {"nav": "import", "form": form, "recent": recent})


def import_list(request):
    require(request.user, Capability.IMPORT)
    return render(request, "corpus/import_list.html", {"nav": "import", "jobs": import_jobs.recent(request.user)})


def import_detail(request, job_id):
    job = import_job_for(request.user, job_id)
    corpus = Corpus.objects.filter(project=job.project, name=job.corpus_name).first() if job.is_done else None
    problems = Paginator(job.problems, PROBLEMS_PER_PAGE).get_page(request.GET.get("problems_page"))
    context = {
        "nav": "import",
        "job": job,
        "corpus": corpus,
        "problems": problems,
        # in the reader's language (the worker stored them as templates and values)
        "problem_lines": problem_text.shown_lines(problems.object_list),
        "lines": problem_text.shown_lines(job.problems) if job.is_done else [],
        "preview": job.is_done and bool(job.problems) and problem_text.source_of(job.problems[0]) == PREVIEW_ONLY,
    }
    if not request.htmx:
        return render(request, "corpus/import_detail.html", context)
    fragment = render(request, "corpus/import_detail.html#progress", context)
    return HttpResponseStopPolling(fragment.content) if job.is_ended else fragment


def import_problems(request, job_id):
    """Every problem line of an import, as a text file."""
    job = import_job_for(request.user, job_id)
    response = HttpResponse(import_jobs.problem_text(job), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="import-{job.pk}-problems.txt"'
    return response


@require_POST
def import_cancel(request, job_id):
    job = import_job_for(request.user, job_id)
    outcome = import_jobs.cancel(job, actor=request.user)
    if outcome == JobStatus.CANCELLED:
        messages.success(request, _("Import cancelled: nothing was imported."))
    elif outcome == JobStatus.CANCELLING:
        messages.success(request, _("Cancelling: the worker rolls the import back; nothing will be imported."))
    else:
        messages.error(request, _("This import has already ended."))
    return redirect("corpus:import_detail", job.pk)


@require_POST
def import_resume(request, job_id):
    job = import_job_for(request.user, job_id)
    if import_jobs.resume(job, actor=request.user):
        messages.success(request, _("Queued again: the import starts over from the stored file."))
    else:
        messages.error(request, _("Only an import whose worker was lost can be resumed; upload the file again."))
    return redirect("corpus:import_detail", job.pk)
