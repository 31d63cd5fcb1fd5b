"""Admin for dataset versions and exports. Examples are not listed here: there are millions and
each holds note text; they are read through exports."""

from django.contrib import admin

from webapp.datasets.models import DatasetExport, DatasetVersion


@admin.register(DatasetVersion)
class DatasetVersionAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "status", "mode", "corpus", "model_version", "profile", "created"]
    list_filter = ["status", "mode", "corpus"]
    search_fields = ["name"]
    list_select_related = ["corpus", "model_version", "profile"]
    readonly_fields = [
        "status",
        "maps_total",
        "maps_done",
        "stats",
        "error",
        "attempts",
        "worker",
        "heartbeat",
        "created",
        "started",
        "finished",
    ]
    raw_id_fields = ["jobs"]


@admin.register(DatasetExport)
class DatasetExportAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "format", "status", "rows", "size_bytes", "created_by", "created"]
    list_filter = ["format", "status"]
    list_select_related = ["dataset", "created_by"]
    readonly_fields = [
        "dataset",
        "format",
        "status",
        "path",
        "rows",
        "size_bytes",
        "error",
        "attempts",
        "worker",
        "heartbeat",
        "created_by",
        "created",
        "started",
        "finished",
    ]
