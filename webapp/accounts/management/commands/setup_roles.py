from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from webapp.accounts.roles import Role


class Command(BaseCommand):
    help = "Create the role groups (clinician, researcher, admin). Idempotent."

    def handle(self, *args, **options):
        for role in Role:
            Group.objects.get_or_create(name=role.value)
        self.stdout.write(f"Roles ready: {', '.join(r.value for r in Role)}")
