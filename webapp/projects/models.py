"""Projects: the unit of need-to-know. A project owns corpora and everything made from them;
a user sees a project's objects only through a membership, which gives a role in that project.
Site admins (superusers) manage projects and memberships (webapp.accounts.membership); who may
see what is said in one place, webapp.projects.scoping."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.text import capfirst
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from webapp.lib.validators import hidden_character
from webapp.projects.roles import ROLE_NAMES, Capability, Role, projects_with, role_name


class ProjectQuerySet(models.QuerySet):
    def where(self, user, capability: Capability = Capability.VIEW):
        """The projects where `user` has `capability` (every project for a site admin)."""
        ids = projects_with(user, capability)
        return self if ids is None else self.filter(pk__in=ids)


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(
        max_length=100, unique=True, help_text=_("Stable name used by settings (OIDC_GROUP_ROLES) and the command line")
    )
    description = models.TextField(
        blank=True, help_text=_("The study or ward, and the approval its notes are used under")
    )
    mlflow_tracking = models.BooleanField(
        default=False,
        db_default=False,  # rows written without the ORM (COPY, SQL) are off too
        help_text=_(
            "Log its training runs and evaluations to MLflow, in an experiment of its own; off until an admin"
            " turns it on"
        ),
    )
    retain_notes_days = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Erase notes this many days after their import; empty: keep them")
    )
    retain_exports_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("Remove exported files this many days after they were made; empty: keep them"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="projects_project_name_not_blank"),
            models.CheckConstraint(condition=~Q(slug=""), name="projects_project_slug_not_blank"),
        ]

    def __str__(self):
        return self.name

    def clean(self):
        """A name holds no control or invisible character (U+202E and the like), as task and
        corpus names: two projects that look alike must be alike (webapp.lib.validators)."""
        hidden = hidden_character(self.name)
        if hidden:
            raise ValidationError({"name": gettext("The name contains %(character)s.") % {"character": hidden}})

    @property
    def mlflow_experiment(self) -> str:
        """Its MLflow experiment: one per project, so MLflow's permissions can follow projects."""
        return f"{settings.MLFLOW_EXPERIMENT_PREFIX}{self.slug}"


class Membership(models.Model):
    """One role of one user in one project; a user may hold several roles in a project."""

    class Origin(models.TextChoices):
        APP = "app", _("Given in the app")
        IDP = "idp", _("From the identity provider's groups")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=[(role.value, capfirst(ROLE_NAMES[role])) for role in Role])
    # IdP memberships are re-evaluated at every sign-in (webapp.accounts.oidc); app ones are
    # changed only on the project's members page.
    origin = models.CharField(max_length=3, choices=Origin.choices, default=Origin.APP)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user__username", "role"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user", "role"], name="projects_membership_unique"),
            models.CheckConstraint(
                condition=Q(role__in=[role.value for role in Role]), name="projects_membership_role"
            ),
        ]
        indexes = [models.Index(fields=["user", "project"], name="projects_membership_user")]

    def __str__(self):
        return gettext("%(user)s is %(role)s in %(project)s") % {
            "user": self.user,
            "role": self.role_name,
            "project": self.project,
        }

    @property
    def role_name(self) -> str:
        """The role as the pages name it, in the reader's language ("clinician")."""
        return role_name(self.role)


class ProjectNotChosen(ValueError):
    """No project named where one is needed, and no single project to take."""


def resolve_project(slug: str = "") -> Project:
    """The project a command acts in: the one named by `slug`, or the only project there is.
    Raises ProjectNotChosen with a message saying what to do."""
    if slug:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            known = ", ".join(Project.objects.values_list("slug", flat=True)[:20]) or "none yet"
            raise ProjectNotChosen(f"no project {slug!r} (projects: {known})")
        return project
    projects = list(Project.objects.all()[:2])
    if not projects:
        raise ProjectNotChosen("there is no project yet: create one first (manage.py create_project)")
    if len(projects) > 1:
        raise ProjectNotChosen("there are several projects: name one with --project SLUG")
    return projects[0]
