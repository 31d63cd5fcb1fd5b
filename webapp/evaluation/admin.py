from django.contrib import admin

from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.admin import ReadOnlyAdmin


@admin.register(RelevanceEvaluation)
class RelevanceEvaluationAdmin(ReadOnlyAdmin):
    """Read-only: evaluations change through their pages (launch, cancel, resume), which are audited."""

    list_display = ("pk", "corpus", "model_version", "status", "done", "total", "created")
    list_filter = ("status",)
    list_select_related = ("corpus", "model_version")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("pairs")
