"""Admin for model versions, peak profiles, relevance jobs and maps.

Jobs, maps and map imports are written by the pipeline only: read-only here (a job is cancelled or resumed
from its page, which audits it). Map lists never load the binary data.
"""

from django.contrib import admin
from django.db.models.functions import Length
from django.utils.translation import gettext_lazy as _

from webapp.pipeline.models import (
    MapImport,
    ModelVersion,
    PeakProfile,
    RelevanceChunk,
    RelevanceJob,
    RelevanceMap,
)


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    list_display = ["name", "family", "path", "is_default", "parent", "created"]
    list_filter = ["family", "is_default"]
    search_fields = ["name", "path"]
    readonly_fields = ["created"]
    raw_id_fields = ["parent"]


@admin.register(PeakProfile)
class PeakProfileAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "version",
        "kernel_size",
        "sigma",
        "lower",
        "upper",
        "strict",
        "trim",
        "is_default",
        "created",
    ]
    readonly_fields = ["created"]


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ChunkInline(admin.TabularInline):
    model = RelevanceChunk
    fields = ["index", "size", "status", "attempts", "worker", "seconds", "error"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = False

    def get_queryset(self, request):
        return super().get_queryset(request).defer("pairs")


@admin.register(RelevanceJob)
class RelevanceJobAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "status",
        "corpus",
        "model_version",
        "method",
        "explain",
        "config_key",
        "done",
        "total",
        "created_by",
        "created",
    ]
    list_filter = ["status", "method", "explain", "model_version"]
    list_select_related = ["corpus", "model_version", "created_by"]
    inlines = [ChunkInline]


@admin.register(RelevanceMap)
class RelevanceMapAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "note_id",
        "task",
        "model_version",
        "config",
        "n_tokens",
        "size",
        "job_id",
    ]
    list_filter = ["config__method", "config", "model_version"]
    list_select_related = ["task", "model_version", "config"]
    raw_id_fields = ["note", "task", "job", "tokens"]
    exclude = ["data"]
    show_full_result_count = False

    def get_queryset(self, request):
        return super().get_queryset(request).defer("data").annotate(size=Length("data"))

    @admin.display(description=_("score bytes"))
    def size(self, relevance_map):
        return relevance_map.size


@admin.register(MapImport)
class MapImportAdmin(ReadOnlyAdmin):
    """Maps computed elsewhere (manage.py import_maps): their maps list under configuration method "imported"."""

    list_display = [
        "id",
        "corpus",
        "model_version",
        "config_key",
        "source",
        "file_name",
        "maps",
        "created_by",
        "created",
    ]
    list_filter = ["model_version", "corpus"]
    list_select_related = ["corpus", "model_version", "created_by"]
