"""Corpus pages: browse corpora and notes, the tasks (made, edited and retired here:
webapp.corpus.tasks), and imports (uploaded files run as
background import jobs, webapp.corpus.import_jobs; their page polls until the job ends)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.accounts.client_ip import client_address
from webapp.accounts.roles import Capability, capability_required, require
from webapp.corpus import import_jobs, search, tasks
from webapp.corpus.access import corpus_for, import_job_for, note_for, task_for
from webapp.corpus.browse import NOTES_PER_PAGE, note_page
from webapp.corpus.forms import UploadForm
from webapp.corpus.models import Corpus
from webapp.corpus.stats import corpus_summaries, task_summaries
from webapp.corpus.task_forms import TaskForm
from webapp.lib import windows
from webapp.lifecycle.status import JobStatus

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
    return render(request, "corpus/task_list.html", {"nav": "tasks", "tasks": task_summaries(request.user)})


def task_new(request):
    require(request.user, Capability.MANAGE_TASKS)
    form = TaskForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        task = tasks.create_task(**form.cleaned_data, actor=request.user, ip=client_address(request))
        messages.success(request, f"Task {task.slug} created.")
        return redirect("corpus:tasks")
    return render(request, "corpus/task_form.html", {"nav": "tasks", "form": form, "task": None})


def task_edit(request, task_id):
    task = task_for(request.user, task_id)
    form = TaskForm(request.POST or None, task=task, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            changed = tasks.edit_task(task, form.cleaned_data, actor=request.user, ip=client_address(request))
        except tasks.TaskEditRefused as refused:
            for problem in refused.problems:
                form.add_error("options", f"Not saved: {problem}.")
        else:
            saved = f"Task {task.slug}: {', '.join(changed)} saved." if changed else "Nothing changed."
            messages.success(request, saved)
            return redirect("corpus:tasks")
    context = {"nav": "tasks", "form": form, "task": task, "use": tasks.use_of(task)}
    return render(request, "corpus/task_form.html", context)


@require_POST
def task_retire(request, task_id):
    task = task_for(request.user, task_id)
    retire = request.POST.get("retired") == "1"
    if tasks.set_retired(task, retire, actor=request.user, ip=client_address(request)):
        done = "retired: hidden from new jobs and the review queue, its data kept" if retire else "back in use"
        messages.success(request, f"Task {task.slug} {done}.")
    return redirect("corpus:tasks")


def upload(request):
    require(request.user, Capability.IMPORT)
    form = UploadForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        job = form.launch(request.user, ip=client_address(request))
        messages.info(
            request,
            f"{job.file_name} is queued for import into {job.corpus_name}; "
            "this page follows it (you can leave it, the import goes on).",
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
    context = {"nav": "import", "job": job, "corpus": corpus}
    if not request.htmx:
        return render(request, "corpus/import_detail.html", context)
    fragment = render(request, "corpus/import_detail.html#progress", context)
    return HttpResponseStopPolling(fragment.content) if job.is_ended else fragment


@require_POST
def import_cancel(request, job_id):
    job = import_job_for(request.user, job_id)
    outcome = import_jobs.cancel(job, actor=request.user)
    if outcome == JobStatus.CANCELLED:
        messages.success(request, "Import cancelled: nothing was imported.")
    elif outcome == JobStatus.CANCELLING:
        messages.success(request, "Cancelling: the worker rolls the import back; nothing will be imported.")
    else:
        messages.error(request, "This import has already ended.")
    return redirect("corpus:import_detail", job.pk)


@require_POST
def import_resume(request, job_id):
    job = import_job_for(request.user, job_id)
    if import_jobs.resume(job, actor=request.user):
        messages.success(request, "Queued again: the import starts over from the stored file.")
    else:
        messages.error(request, "Only an import whose worker was lost can be resumed; upload the file again.")
    return redirect("corpus:import_detail", job.pk)
