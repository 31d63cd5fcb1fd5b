"""Admin for corpora, notes, tasks and annotations.

List pages never load note text (a corpus may hold millions of notes): they show ids and the
text length computed by the database. The text is shown only on a note's own page.
"""

from django.contrib import admin
from django.db.models.functions import Length
from django.utils.translation import gettext_lazy as _

from webapp.corpus.models import Annotation, Corpus, Note, Task


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ["name", "language", "note_count", "annotation_count", "source", "created"]
    list_filter = ["language"]
    search_fields = ["name", "source"]
    readonly_fields = ["created", "note_count", "annotation_count"]  # kept by the database (corpus.stats)


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin):
    list_display = ["id", "external_id", "corpus", "length", "created"]
    list_filter = ["corpus"]
    search_fields = ["=external_id"]  # exact match: a substring search over millions of rows is a scan
    list_select_related = ["corpus"]
    readonly_fields = ["content_hash", "created"]
    raw_id_fields = ["corpus"]
    show_full_result_count = False
    ordering = ["-id"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("text", "metadata").annotate(length=Length("text"))

    @admin.display(ordering="length", description=_("characters"))
    def length(self, note):
        return note.length


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["slug", "description", "group", "held_out", "option_count", "decision_count"]
    list_filter = ["held_out", "group"]
    search_fields = ["slug", "description"]
    readonly_fields = ["created", "decision_count"]  # kept by the database (corpus.stats)

    @admin.display(description=_("options"))
    def option_count(self, task):
        return len(task.options)


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["id", "note_ref", "task", "label", "annotator_name", "created"]
    list_filter = ["task__group", "annotator_name"]
    search_fields = ["=note__external_id", "task__slug", "annotator_name"]
    list_select_related = ["task"]
    raw_id_fields = ["note", "annotator"]
    readonly_fields = ["created"]
    show_full_result_count = False
    ordering = ["-id"]

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        return qs.select_related("note").defer("note__text", "note__metadata")

    @admin.display(description=_("note"))
    def note_ref(self, annotation):
        return f"{annotation.note.corpus_id}/{annotation.note.external_id}"
