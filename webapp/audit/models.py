from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from webapp.projects.scoping import ProjectScopedQuerySet


class AuditEventQuerySet(ProjectScopedQuerySet):
    def matching(self, *, action="", actor="", object_type="", since=None, until=None):
        """The events an admin filters for: `actor` is a case-insensitive prefix (so "cli:" finds every
        command-line action); `since` and `until` are aware datetimes, `until` exclusive."""
        events = self
        if action:
            events = events.filter(action=action)
        if actor:
            events = events.filter(actor_name__istartswith=actor)
        if object_type:
            events = events.filter(object_type=object_type)
        if since is not None:
            events = events.filter(created__gte=since)
        if until is not None:
            events = events.filter(created__lt=until)
        return events


class AuditEvent(models.Model):
    """Who did what, when, from where, to which object. Never stores note text: details hold ids,
    counts, names and reason categories only."""

    class Action(models.TextChoices):
        IMPORT_NOTES = "import_notes", _("Imported notes")
        IMPORT_ANNOTATIONS = "import_annotations", _("Imported annotations")
        IMPORT_REFUSED = "import_refused", _("Refused an import")
        IMPORT_MAPS = "import_maps", _("Imported relevance maps")
        LOAD_CATALOG = "load_catalog", _("Loaded task catalog")
        EXPORT = "export", _("Exported a dataset")
        REVIEW_DECISION = "review_decision", _("Review decision")
        LAUNCH_JOB = "launch_job", _("Launched a job")
        CANCEL_JOB = "cancel_job", _("Cancelled a job")
        LOGIN = "login", _("Logged in")
        LOGOUT = "logout", _("Logged out")
        LOGIN_FAILED = "login_failed", _("Failed login")
        LOCKED_OUT = "locked_out", _("Login locked out")
        LOGIN_REFUSED = "login_refused", _("Login refused by role mapping")
        ACCOUNT_CREATED = "account_created", _("Account created at sign-in")
        ROLES_CHANGED = "roles_changed", _("Roles changed at sign-in")
        PERMISSION_DENIED = "permission_denied", _("Permission refused")
        EXPORT_AUDIT = "export_audit", _("Exported the audit log")
        CREATE_TASK = "create_task", _("Created a task")
        EDIT_TASK = "edit_task", _("Edited a task")
        RETIRE_TASK = "retire_task", _("Retired a task")
        RESTORE_TASK = "restore_task", _("Brought back a retired task")
        CREATE_PROJECT = "create_project", _("Created a project")
        EDIT_PROJECT = "edit_project", _("Edited a project")
        ADD_MEMBER = "add_member", _("Gave a role in a project")
        REMOVE_MEMBER = "remove_member", _("Took a role in a project away")
        CREATE_API_TOKEN = "create_api_token", _("Made an API token")
        REVOKE_API_TOKEN = "revoke_api_token", _("Revoked an API token")
        API_TOKEN_REFUSED = "api_token_refused", _("Refused an API request")
        ADD_WEBHOOK = "add_webhook", _("Added a webhook")
        DELETE_WEBHOOK = "delete_webhook", _("Removed a webhook")
        SWITCH_WEBHOOK = "switch_webhook", _("Switched a webhook on or off")
        ERASURE_REQUESTED = "erasure_requested", _("Asked for an erasure")
        ERASURE = "erasure", _("Erased data (receipt)")
        EXPORT_EXPIRED = "export_expired", _("Removed an export's files (retention)")
        CREATE_USER = "create_user", _("Made a local account")
        DISABLE_USER = "disable_user", _("Disabled an account")
        ENABLE_USER = "enable_user", _("Enabled an account again")
        DEID_POLICY = "deid_policy", _("Changed the de-identification policy")
        DEIDENTIFY = "deidentify", _("De-identified a corpus")
        DEID_SCAN = "deid_scan", _("Scanned for identifiers left")
        MARK_DEIDENTIFIED = "mark_deidentified", _("Marked a corpus de-identified")
        RELEASE_IDENTIFIABLE = "release_identifiable", _("Let data that is not de-identified leave")
        MISSED_IDENTIFIER = "missed_identifier", _("Marked a missed identifier")

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="audit_events",
        verbose_name=_("actor"),
    )
    actor_name = models.CharField(
        max_length=150,
        help_text=_(
            "Kept when the user is deleted; 'cli:<os user>' for commands, 'worker:<os user>' for workers, "
            "for a failed login the username tried if an account has it, else '(unknown username)'"
        ),
        verbose_name=_("actor name"),
    )
    action = models.CharField(max_length=40, choices=Action.choices, verbose_name=_("action"))
    project = models.ForeignKey(
        "projects.Project",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The project of the object acted on; none for sign-ins and site administration"),
        verbose_name=_("project"),
    )
    object_type = models.CharField(max_length=60, blank=True, verbose_name=_("object type"))
    object_id = models.CharField(max_length=64, blank=True, verbose_name=_("object id"))
    ip = models.GenericIPAddressField(
        null=True, blank=True, help_text=_("The client's address, for web requests"), verbose_name=_("IP address")
    )
    details = models.JSONField(default=dict, blank=True, verbose_name=_("details"))
    created = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created"))

    objects = AuditEventQuerySet.as_manager()

    project_paths = ("project",)  # webapp.projects.scoping

    class Meta:
        verbose_name = _("audit log entry")
        verbose_name_plural = _("audit log entries")
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["object_type", "object_id"]),
            models.Index(fields=["action", "-id"], name="audit_action_recent"),
        ]

    def __str__(self):
        return f"{self.created:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.object_type}#{self.object_id}"

    def detail_pairs(self) -> list[tuple[str, object]]:
        """The details as (key, value) pairs in key order, for templates: a template reading
        `details.items` would get the dict method, or a stored key named "items", whichever wins."""
        details = self.details if isinstance(self.details, dict) else {"details": self.details}
        return sorted(details.items())
