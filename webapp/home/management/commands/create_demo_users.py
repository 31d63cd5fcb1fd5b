import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from webapp.home.demo import demo_project
from webapp.projects.models import Membership
from webapp.projects.roles import Role, forget_roles

# (username, role in the demo project, site admin)
DEMO_USERS = [
    ("clinician", Role.CLINICIAN, False),
    ("curator", Role.CURATOR, False),
    ("researcher", Role.RESEARCHER, False),
    ("admin", Role.ADMIN, True),
]


class Command(BaseCommand):
    help = (
        "Create (or reset) one demo user per role, members of the demo project, with a fresh random "
        "password, and print them. 'admin' is also a site admin."
    )

    def handle(self, *args, **options):
        User = get_user_model()
        project = demo_project()
        self.stdout.write(f"Demo users of project {project.slug!r} (passwords are new on every run):")
        for username, role, site_admin in DEMO_USERS:
            password = secrets.token_urlsafe(9)
            user, _ = User.objects.get_or_create(username=username)
            user.is_staff = user.is_superuser = site_admin
            user.set_password(password)
            user.save()
            Membership.objects.filter(user=user, project=project).exclude(role=role).delete()
            Membership.objects.get_or_create(user=user, project=project, role=role)
            forget_roles(user)
            self.stdout.write(f"  {username:<11} {password}   ({role.value}{', site admin' if site_admin else ''})")
