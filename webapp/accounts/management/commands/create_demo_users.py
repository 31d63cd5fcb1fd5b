import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from webapp.accounts.roles import Role

DEMO_USERS = [
    ("clinician", Role.CLINICIAN, False),
    ("researcher", Role.RESEARCHER, False),
    ("admin", Role.ADMIN, True),
]


class Command(BaseCommand):
    help = "Create (or reset) one demo user per role with a fresh random password, and print them."

    def handle(self, *args, **options):
        User = get_user_model()
        self.stdout.write("Demo users (passwords are new on every run):")
        for username, role, is_staff in DEMO_USERS:
            password = secrets.token_urlsafe(9)
            user, _ = User.objects.get_or_create(username=username)
            user.is_staff = is_staff
            user.is_superuser = is_staff
            user.set_password(password)
            user.save()
            user.groups.set([Group.objects.get_or_create(name=role.value)[0]])
            self.stdout.write(f"  {username:<11} {password}   ({role.value})")
