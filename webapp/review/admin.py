from django.contrib import admin

from webapp.review.models import MapSample, PeakDecision, ValidationJudgement, ValidationSet


@admin.register(PeakDecision)
class PeakDecisionAdmin(admin.ModelAdmin):
    """Read-only: decisions are made on the review pages, where versions and the audit log apply."""

    list_display = (
        "id",
        "reviewer",
        "decision",
        "note_id",
        "task",
        "model_version",
        "method",
        "start",
        "end",
        "version",
        "updated",
    )
    list_filter = ("decision", "model_version", "method")
    search_fields = ("reviewer__username",)
    raw_id_fields = ("note",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ValidationSet)
class ValidationSetAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "corpus", "model_version", "method", "size", "seed", "created_by", "created")
    readonly_fields = ("items", "grid")


admin.site.register(ValidationJudgement)
admin.site.register(MapSample)
