from django.contrib import messages
from django.shortcuts import redirect, render

from webapp.accounts.roles import Capability, capability_required, require
from webapp.corpus.access import corpus_for, note_for
from webapp.corpus.browse import NOTES_PER_PAGE, note_page
from webapp.corpus.forms import UploadForm
from webapp.corpus.models import Task
from webapp.corpus.stats import corpus_summaries
from webapp.corpus.uploads import import_upload


@capability_required(Capability.VIEW)
def corpus_list(request):
    return render(request, "corpus/corpus_list.html", {"nav": "corpora", "corpora": corpus_summaries()})


def corpus_detail(request, corpus_id):
    corpus = corpus_for(request.user, corpus_id)
    page = note_page(corpus, after=request.GET.get("after"), query=request.GET.get("q", ""))
    template = "corpus/corpus_detail.html#note-rows" if request.htmx else "corpus/corpus_detail.html"
    return render(request, template, {"nav": "corpora", "corpus": corpus, "page": page, "per_page": NOTES_PER_PAGE})


def note_detail(request, corpus_id, note_id):
    note = note_for(request.user, corpus_id, note_id)
    annotations = note.annotations.select_related("task").order_by("task__slug", "annotator_name")
    return render(request, "corpus/note_detail.html", {"nav": "corpora", "note": note, "annotations": annotations})


@capability_required(Capability.VIEW)
def task_list(request):
    tasks = Task.objects.order_by("group", "slug")
    return render(request, "corpus/task_list.html", {"nav": "tasks", "tasks": tasks})


def upload(request):
    require(request.user, Capability.IMPORT)
    form = UploadForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        report = import_upload(data["file"], kind=data["kind"], corpus=data["corpus"], language=data["language"],
                               update=data["update"], actor=request.user)
        if report.ok:
            messages.success(request, f"Imported into {data['corpus']}: {report.created} created, "
                                      f"{report.updated} updated, {report.unchanged} unchanged.")
            return redirect("corpus:list")
    return render(request, "corpus/upload.html", {"nav": "import", "form": form, "report": report})
