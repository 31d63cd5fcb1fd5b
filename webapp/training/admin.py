from django.contrib import admin

from webapp.training.models import LabeledSplit, RunLog, TrainingRun


@admin.register(LabeledSplit)
class LabeledSplitAdmin(admin.ModelAdmin):
    list_display = ("id", "corpus", "seed", "test_ratio", "train_count", "test_count", "created")
    list_filter = ("corpus",)
    readonly_fields = ("corpus", "seed", "test_ratio", "tasks", "train_count", "test_count", "created_by", "created")


class RunLogInline(admin.TabularInline):
    model = RunLog
    extra = 0
    can_delete = False
    readonly_fields = ("created", "level", "message")


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "name",
        "kind",
        "preset",
        "model_version",
        "status",
        "step",
        "total_steps",
        "macro_f1",
        "created",
    )
    list_filter = ("kind", "status", "preset")
    search_fields = ("name",)
    raw_id_fields = ("model_version", "dataset", "split", "produced_model", "created_by")
    readonly_fields = (
        "config",
        "provenance",
        "results",
        "code_version",
        "heartbeat",
        "attempts",
        "worker",
        "output_dir",
        "created",
        "started",
        "finished",
    )
    inlines = [RunLogInline]
