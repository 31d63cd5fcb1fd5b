from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from webapp.accounts.membership import add_member, remove_member
from webapp.projects.models import Project
from webapp.projects.roles import Role


class Command(BaseCommand):
    help = "Give a user a role in a project (or take it away with --remove). Audited."

    def add_arguments(self, parser):
        parser.add_argument("project", help="the project's slug")
        parser.add_argument("username")
        parser.add_argument("role", choices=[role.value for role in Role])
        parser.add_argument("--remove", action="store_true", help="take the role away instead")

    def handle(self, *args, project, username, role, remove, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"no project {project!r}")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        if remove:
            changed = remove_member(found, user, role, actor="command line")
        else:
            changed = add_member(found, user, role, actor="command line")
        done = ("removed" if remove else "added") if changed else "unchanged"
        self.stdout.write(f"{username} as {role} in {project}: {done}.")
