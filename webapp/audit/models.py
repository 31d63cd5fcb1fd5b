from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """Who did what, when, to which object. Never stores note text."""

    class Action(models.TextChoices):
        IMPORT_NOTES = "import_notes", "Imported notes"
        IMPORT_ANNOTATIONS = "import_annotations", "Imported annotations"
        LOAD_CATALOG = "load_catalog", "Loaded task catalog"
        EXPORT = "export", "Exported a dataset"
        REVIEW_DECISION = "review_decision", "Review decision"
        LAUNCH_JOB = "launch_job", "Launched a job"
        CANCEL_JOB = "cancel_job", "Cancelled a job"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events"
    )
    actor_name = models.CharField(max_length=150, help_text="Kept when the user is deleted; 'system' for commands")
    action = models.CharField(max_length=40, choices=Action.choices)
    object_type = models.CharField(max_length=60, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self):
        return f"{self.created:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.object_type}#{self.object_id}"
