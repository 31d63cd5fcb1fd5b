from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProjectsConfig(AppConfig):
    name = "webapp.projects"
    label = "projects"
    verbose_name = _("Projects and their members")

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from webapp.projects.models import Membership
        from webapp.projects.roles import roles_changed

        # A membership saved or deleted (also by a project's or a user's cascade) renews the
        # user's roles kept in the cache (webapp.projects.roles), so the change counts at once.
        def changed(sender, instance, **kwargs):
            # A row deleted by primary key alone (an erasure's .only("pk")) has no user loaded,
            # and loading it now would look for a row that is gone.
            roles_changed(instance.__dict__.get("user_id"))

        post_save.connect(changed, sender=Membership, weak=False, dispatch_uid="projects-roles-changed-save")
        post_delete.connect(changed, sender=Membership, weak=False, dispatch_uid="projects-roles-changed-delete")
