from django.contrib import admin

from webapp.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created", "actor_name", "action", "object_type", "object_id", "ip"]
    list_filter = ["action", "object_type"]
    search_fields = ["actor_name", "object_id", "ip"]
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
