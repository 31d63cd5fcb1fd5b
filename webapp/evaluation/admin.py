from django.contrib import admin

from webapp.evaluation.models import RelevanceEvaluation


@admin.register(RelevanceEvaluation)
class RelevanceEvaluationAdmin(admin.ModelAdmin):
    list_display = ("pk", "corpus", "model_version", "status", "done", "total", "created")
    list_filter = ("status",)
    readonly_fields = ("pairs", "result", "configs", "attempts", "worker", "heartbeat", "started", "finished")
